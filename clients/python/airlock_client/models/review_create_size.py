from typing import Literal, cast

ReviewCreateSize = Literal["large", "medium", "small"]

REVIEW_CREATE_SIZE_VALUES: set[ReviewCreateSize] = {
    "large",
    "medium",
    "small",
}


def check_review_create_size(value: str) -> ReviewCreateSize:
    if value in REVIEW_CREATE_SIZE_VALUES:
        return cast(ReviewCreateSize, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REVIEW_CREATE_SIZE_VALUES!r}")

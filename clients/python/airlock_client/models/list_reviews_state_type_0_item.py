from typing import Literal, cast

ListReviewsStateType0Item = Literal["failed", "finished", "queued", "running"]

LIST_REVIEWS_STATE_TYPE_0_ITEM_VALUES: set[ListReviewsStateType0Item] = {
    "failed",
    "finished",
    "queued",
    "running",
}


def check_list_reviews_state_type_0_item(value: str) -> ListReviewsStateType0Item:
    if value in LIST_REVIEWS_STATE_TYPE_0_ITEM_VALUES:
        return cast(ListReviewsStateType0Item, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_REVIEWS_STATE_TYPE_0_ITEM_VALUES!r}")

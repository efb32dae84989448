from typing import Literal, cast

TenantUpdateStatusType2Type1 = Literal["active", "suspended"]

TENANT_UPDATE_STATUS_TYPE_2_TYPE_1_VALUES: set[TenantUpdateStatusType2Type1] = {
    "active",
    "suspended",
}


def check_tenant_update_status_type_2_type_1(value: str) -> TenantUpdateStatusType2Type1:
    if value in TENANT_UPDATE_STATUS_TYPE_2_TYPE_1_VALUES:
        return cast(TenantUpdateStatusType2Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TENANT_UPDATE_STATUS_TYPE_2_TYPE_1_VALUES!r}")

from typing import Literal, cast

NodeState = Literal["draining", "lost", "ready"]

NODE_STATE_VALUES: set[NodeState] = {
    "draining",
    "lost",
    "ready",
}


def check_node_state(value: str) -> NodeState:
    if value in NODE_STATE_VALUES:
        return cast(NodeState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {NODE_STATE_VALUES!r}")

"""What Android prints about temperatures: `dumpsys thermalservice`'s HAL section."""

from __future__ import annotations

import math
import re

HAL_LINE = re.compile(
    r"Temperature\{mValue=(?P<value>-?[\d.]+|NaN), mType=(?P<type>-?\d+), "
    r"mName=(?P<name>[^,}]+)"
)


def hal_temperatures(dumpsys_text: str) -> dict[str, dict]:
    """`dumpsys thermalservice`'s "Current temperatures from HAL" section: name -> {"c",
    "type"} (an empty dict where the device prints none)."""
    section = dumpsys_text.split("Current temperatures from HAL:", 1)
    if len(section) < 2:
        return {}
    body = re.split(r"\n\S", "\n" + section[1].lstrip("\n"), maxsplit=1)[0]
    out = {}
    for match in HAL_LINE.finditer(body):
        value = float(match["value"])
        if not math.isfinite(value):  # a sensor the HAL could not read
            continue
        out[match["name"].strip()] = {"c": value, "type": int(match["type"])}
    return out

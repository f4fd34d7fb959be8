"""Condition checks against weather data, and an empirical check.

Checkable now, from hourly or daily weather: season, rain, wind speed, relative humidity
(measured, or computed from temperature and dew point with the Magnus formula) and
temperature. Not checkable from a weather table: inversions, boundary-layer height, aerosol
pH, aerosol liquid water: those go to ``uncertainties``, and the answer softens its wording.

The empirical check: in the user's own time series it compares the
median PM2.5 when a chain's checkable conditions hold with the median when they do not, and
reports whether the data support or contradict the chain's direction.

Weather tables: the UCI Beijing PM2.5 layout (year, month, day, hour, pm2.5, DEWP, TEMP,
Iws cumulated wind speed, Ir cumulated hours of rain, cbwd) or a generic one with a
``time``/``date`` column and any of relative_humidity, temperature, dew_point, wind_speed,
precipitation, pm25.
"""

from __future__ import annotations

import io
import math
import operator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..inputs import read_text
from .records import Condition, EmpiricalSupport

CHECKABLE = ("relative_humidity", "wind_speed", "precipitation", "season", "temperature")
NOT_CHECKABLE_VI = {
    "temperature_inversion": "nghịch nhiệt (chưa có số liệu thám không)",
    "pblh": "độ cao lớp biên (chưa có số liệu lớp biên)",
    "aerosol_ph": "pH của aerosol (chưa có số liệu thành phần hạt)",
    "aerosol_liquid_water": "lượng nước lỏng trong aerosol (chưa có số liệu định lượng)",
}
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
        "==": operator.eq, "!=": operator.ne}


def relative_humidity(temperature_c, dew_point_c):
    """RH (%) from temperature and dew point, Magnus formula (Alduchov & Eskridge 1996
    constants: a = 17.625, b = 243.04 °C)."""
    a, b = 17.625, 243.04
    t = np.asarray(temperature_c, dtype=float)
    d = np.asarray(dew_point_c, dtype=float)
    return 100.0 * np.exp(a * d / (b + d) - a * t / (b + t))


def season_of(month: int, southern: bool = False) -> str:
    """Meteorological seasons: DJF winter, MAM spring, JJA summer, SON autumn."""
    seasons = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring",
               6: "summer", 7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}
    name = seasons[int(month)]
    if southern:
        name = {"winter": "summer", "summer": "winter", "spring": "autumn", "autumn": "spring"}[name]
    return name


def load_weather(path: str | Path) -> pd.DataFrame:
    """A weather table indexed by time with the checkable variables (and pm25 if present)."""
    path = Path(path)
    text = read_text(path, "weather")
    try:
        raw = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"weather {path}: not a readable CSV ({type(exc).__name__})") from None
    cols = {c.lower(): c for c in raw.columns}
    out = pd.DataFrame()
    if {"year", "month", "day"} <= set(cols):
        # a value that is not a number, or a day its month does not have, is NaT (refused below)
        parts = {k: pd.to_numeric(raw[cols[k]], errors="coerce") for k in ("year", "month", "day")}
        parts["hour"] = pd.to_numeric(raw[cols["hour"]], errors="coerce") if "hour" in cols else 0
        out.index = pd.to_datetime(pd.DataFrame(parts), errors="coerce")
    elif "time" in cols or "date" in cols:
        # each value read on its own ("mixed"): a column may mix forms, and pandas would warn
        out.index = pd.to_datetime(raw[cols.get("time") or cols["date"]], errors="coerce", format="mixed")
    else:
        raise InputError(f"weather {path}: needs year/month/day(/hour) columns or a time/date column")
    if out.index.isna().any():
        raise InputError(f"weather {path}: some time values cannot be read as dates")

    def column(*names):
        for n in names:
            if n in cols:
                return pd.to_numeric(raw[cols[n]], errors="coerce").to_numpy()
        return None

    temp = column("temperature", "temp", "t2m")
    dew = column("dew_point", "dewp", "dewpoint", "td")
    rh = column("relative_humidity", "rh", "humidity")
    if rh is None and temp is not None and dew is not None:
        rh = relative_humidity(temp, dew)
    if rh is not None:
        out["relative_humidity"] = np.clip(rh, 0, 100)
    if temp is not None:
        out["temperature"] = temp
    wind = column("wind_speed", "ws", "wind")
    if wind is None and "iws" in cols:
        # UCI Beijing: Iws accumulates while the direction (cbwd) stays the same; the hourly
        # speed is the increase, or the value itself when the direction just changed.
        iws = pd.to_numeric(raw[cols["iws"]], errors="coerce")
        same = raw[cols["cbwd"]].eq(raw[cols["cbwd"]].shift()) if "cbwd" in cols else False
        step = iws.diff()
        wind = np.where(same & (step > 0), step, iws).astype(float)
    if wind is not None:
        out["wind_speed"] = wind
    rain = column("precipitation", "rain", "prcp", "ir")
    if rain is not None:
        out["precipitation"] = rain
    pm = column("pm25", "pm2.5", "pm2_5")
    if pm is not None:
        out["pm25"] = pm
    out["season"] = [season_of(m) for m in out.index.month]
    if len(out.columns) <= 1:
        raise InputError(f"weather {path}: no usable columns (relative humidity, temperature and "
                         f"dew point, wind speed, precipitation)")
    return out.sort_index()


def _holds(series_or_value, op: str, value):
    fn = _OPS.get(op)
    if fn is None:
        raise InputError(f"condition: unknown operator {op!r}")
    return fn(series_or_value, value)


@dataclass
class ConditionCheck:
    variable: str
    op: str
    value: object
    unit: str
    status: str            # holds, fails, not_checkable, no_data
    observed: object = None
    at: str = ""

    def to_dict(self) -> dict:
        return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in vars(self).items()}


def check_condition(condition: Condition, weather: pd.DataFrame | None, at=None) -> ConditionCheck:
    """Evaluate one condition for the time ``at`` (default: the table's last row)."""
    var, op, value = condition["variable"], condition["op"], condition["value"]
    unit = condition.get("unit", "")
    if var not in CHECKABLE:
        return ConditionCheck(var, op, value, unit, "not_checkable")
    if weather is None or var not in weather.columns:
        return ConditionCheck(var, op, value, unit, "no_data")
    when = weather.index[-1] if at is None else pd.Timestamp(at)
    row = weather.loc[weather.index <= when]
    if row.empty:
        return ConditionCheck(var, op, value, unit, "no_data", at=str(when))
    observed = row[var].iloc[-1]
    if isinstance(observed, float) and math.isnan(observed):
        return ConditionCheck(var, op, value, unit, "no_data", at=str(row.index[-1]))
    status = "holds" if _holds(observed, op, value) else "fails"
    return ConditionCheck(var, op, value, unit, status,
                          observed.item() if hasattr(observed, "item") else observed, str(row.index[-1]))


def expected_direction(condition: Condition, variable_effect: int) -> int:
    """+1 when the condition holding should mean more PM2.5. ``variable_effect`` is the
    sign of the variable's effect on PM2.5 along the chain; a "<" condition (the variable
    is low) flips it; an equality (a season) keeps it."""
    return -variable_effect if condition["op"] in ("<", "<=") else variable_effect


def empirical_support(conditions: list[Condition], direction: int, weather: pd.DataFrame,
                      min_hours: int = 30) -> EmpiricalSupport:
    """Median PM2.5 when all the conditions hold vs when they do not, in the series.

    direction: +1 when the chain says PM2.5 should be higher while they hold, -1 lower.
    """
    usable = [c for c in conditions if c["variable"] in CHECKABLE and c["variable"] in weather.columns]
    if "pm25" not in weather.columns:
        return {"verdict": "no_pm25_series"}
    if not usable:
        return {"verdict": "no_checkable_condition"}
    data = weather.dropna(subset=["pm25"] + [c["variable"] for c in usable])
    mask = np.ones(len(data), dtype=bool)
    for c in usable:
        mask &= np.asarray(_holds(data[c["variable"]], c["op"], c["value"]))
    on, off = data["pm25"][mask], data["pm25"][~mask]
    said = [f"{c['variable']} {c['op']} {c['value']}{c.get('unit', '')}" for c in usable]
    result: EmpiricalSupport = {"conditions": said, "hours_holding": int(mask.sum()), "hours_not": int((~mask).sum())}
    if len(on) < min_hours or len(off) < min_hours:
        return {**result, "verdict": "too_few_hours"}
    med_on, med_off = float(on.median()), float(off.median())
    ratio = med_on / med_off if med_off else float("inf")
    if med_off and abs(med_on - med_off) / med_off < 0.05:
        verdict = "no_clear_difference"   # within 5 %: the series does not tell
    else:
        verdict = "supports" if (med_on - med_off) * direction > 0 else "contradicts"
    return {**result, "median_pm25_when_holding": round(med_on, 1), "median_pm25_otherwise": round(med_off, 1),
            "ratio": round(ratio, 3), "verdict": verdict}

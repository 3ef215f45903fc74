"""Wikidata time values as the ``xsd:dateTime`` lexical forms Wikibase writes in its RDF.

Wikibase's RDF builder (``TimeRdfBuilder``) writes a time value through
``JulianDateTimeValueCleaner`` in XSD 1.1 mode (``repo/includes/Rdf/DateTimeValueCleaner.php``
and ``JulianDateTimeValueCleaner.php`` in wikimedia/mediawiki-extensions-Wikibase); the
truthy and full RDF dumps and WDQS (whose munger and ``WikibaseDate`` keep the lexical form)
carry what it wrote. This module gives the same strings from a JSON time value:

* the leading ``+`` and the zeros that pad the year are dropped (at least 4 digits kept);
* precision year or coarser: month and day become ``01``; precision month: the day ``01``;
  a month or day of ``00`` becomes ``01``, a month above 12 becomes 12, a day past the
  month's end (``02-31``) its last day;
* BCE years with year precision or finer go up by one (XSD 1.1 numbering: 1 BCE is year
  ``0000``, 2 BCE ``-0001``);
* Julian-calendar dates of day precision or finer are converted to the Gregorian calendar
  (for years -4713 to 1465072; outside that range the date is taken as Gregorian);
* year 0, or a day-precise date in another calendar, has no ``xsd:dateTime`` form: Wikibase
  then writes the JSON string itself as a plain literal (:func:`clean` returns None).

The calendar arithmetic is PHP's ``juliantojd`` / ``jdtogregorian`` / ``cal_days_in_month``
(ext/calendar), which Wikibase calls.
"""
from __future__ import annotations

GREGORIAN = "http://www.wikidata.org/entity/Q1985727"
JULIAN = "http://www.wikidata.org/entity/Q1985786"
DAY, MONTH, YEAR = 11, 10, 9


class _Illegal(ValueError):
    pass


def clean(time: str, precision: int | None = DAY, calendar: str | None = GREGORIAN, xsd11: bool = True) -> str | None:
    """The ``xsd:dateTime`` lexical form Wikibase writes for a JSON time value, or None
    where it writes the raw string instead. A missing precision counts as day precision,
    a missing calendar model as Gregorian."""
    precision = DAY if precision is None else int(precision)
    calendar = (calendar or GREGORIAN).strip()
    if calendar == JULIAN and precision >= DAY:
        try:
            return _julian(time, xsd11) or _gregorian(time, precision, xsd11)
        except _Illegal:
            return None
    if calendar == GREGORIAN or precision < DAY:
        return _gregorian(time, precision, xsd11)
    return None


def _parse(value: str):
    """(minus, year digits without leading zeros, month, day, time) as Wikibase's
    ``parseDateValue``; _Illegal for year 0."""
    date, sep, rest = value.partition("T")
    if not sep or not date:
        raise _Illegal(value)
    minus = "-" if date[0] == "-" else ""
    parts = date[1:].split("-", 2)
    if len(parts) < 3:
        raise _Illegal(value)
    y, m, d = parts[0].lstrip("0"), _php_int(parts[1]), _php_int(parts[2])
    m = min(max(m, 1), 12)
    d = max(d, 1)
    if y == "" or not y.isdigit():
        raise _Illegal(value)  # year 0 (T94064), or no year at all
    return minus, y, m, d, rest


def _php_int(s: str) -> int:
    """PHP's ``(int)`` of a string: its leading digits, 0 when there are none."""
    n = 0
    for ch in s:
        if not ch.isdigit():
            break
        n = n * 10 + ord(ch) - 48
    return n


def _gregorian(value: str, precision: int, xsd11: bool) -> str | None:
    try:
        minus, y, m, d, rest = _parse(value)
    except _Illegal:
        return None
    if precision <= YEAR:
        m = d = 1
    elif precision == MONTH:
        d = 1
    if not (d <= 28 or (m != 2 and d <= 30)):
        safe = -4713 if minus and float(y) >= 4714 else int(y) * (-1 if minus else 1)
        d = min(d, _days_in_month(m, safe))
    if xsd11 and precision >= YEAR and minus:
        y = f"{float(y) - 1:.0f}"
        if y == "0":
            minus = ""
    return f"{minus}{y.rjust(4, '0')}-{m:02d}-{d:02d}T{rest}"


def _julian(value: str, xsd11: bool) -> str | None:
    minus, y, m, d, rest = _parse(value)
    year = -int(y) if minus else int(y)
    if year < -4713 or year > 1465072:  # PHP's calendar functions overflow outside
        return None
    jd = _julian_to_jd(year, m, d)
    if jd == 0:
        return None
    gy, gm, gd = _jd_to_gregorian(jd)
    if gy == 0:
        return None
    if xsd11 and gy < 0:
        gy += 1
    return f"{'-' if gy < 0 else ''}{abs(gy):04d}-{gm:02d}-{gd:02d}T{rest}"


def _julian_to_jd(year: int, month: int, day: int) -> int:
    """PHP's ``JulianToSdn`` (0 for a date it rejects)."""
    if year == 0 or year < -4713 or not 1 <= month <= 12 or not 1 <= day <= 31:
        return 0
    if year == -4713 and month == 1 and day == 1:
        return 0
    y = year + 4801 if year < 0 else year + 4800
    if month > 2:
        mo = month - 3
    else:
        mo = month + 9
        y -= 1
    return (y * 1461) // 4 + (mo * 153 + 2) // 5 + day - 32083


def _jd_to_gregorian(sdn: int) -> tuple[int, int, int]:
    """PHP's ``SdnToGregorian``: (year without a year 0, month, day); (0, 0, 0) on failure."""
    if sdn <= 0:
        return 0, 0, 0
    temp = (sdn + 32045) * 4 - 1
    century = temp // 146097
    temp = ((temp % 146097) // 4) * 4 + 3
    year = century * 100 + temp // 1461
    day_of_year = (temp % 1461) // 4 + 1
    temp = day_of_year * 5 - 3
    month = temp // 153
    day = (temp % 153) // 5 + 1
    if month < 10:
        month += 3
    else:
        year += 1
        month -= 9
    year -= 4800
    if year <= 0:
        year -= 1
    return year, month, day


def _days_in_month(month: int, year: int) -> int:
    """PHP's ``cal_days_in_month(CAL_GREGORIAN, ...)`` (no year 0: -1 is 1 BCE, a leap year)."""
    if month != 2:
        return 30 if month in (4, 6, 9, 11) else 31
    astro = year + 1 if year < 0 else year
    return 29 if astro % 4 == 0 and (astro % 100 != 0 or astro % 400 == 0) else 28

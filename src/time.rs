//! Time: the clock every op reads, and the date forms users type for `--due` and `--defer`.
//!
//! The clock can be pinned for reproducible tests with `FLEET_TEST_NOW` (RFC 3339); the CLI
//! reads that variable once and passes a [`Clock`] down, so the library never reads the
//! environment itself.

use jiff::{Span, Timestamp, ToSpan, Zoned, civil::Date, tz::TimeZone};

/// Where "now" comes from.
#[derive(Debug, Clone, Copy, Default)]
pub enum Clock {
    #[default]
    System,
    /// A fixed instant (tests).
    Fixed(Timestamp),
}

impl Clock {
    pub fn now(&self) -> Timestamp {
        match self {
            Clock::System => Timestamp::now(),
            Clock::Fixed(at) => *at,
        }
    }
}

/// The date forms `--due` and `--defer` accept, for hints.
pub const DATE_FORMS: &str =
    "+6h, +1d, +2w, tomorrow, next monday, 2025-01-15, 2025-01-15T10:00:00Z";

/// Error for a date a user typed.
#[derive(Debug, thiserror::Error)]
pub enum DateError {
    /// The text is none of the accepted forms.
    #[error(
        "invalid --{flag} format {value:?}. Examples: +6h, +1d, +2w, tomorrow, next monday, 2025-01-15, 2025-01-15T10:00:00Z"
    )]
    Invalid { flag: &'static str, value: String },
    /// The text is well formed, but the date it names is outside the representable range
    /// (years -9999 to 9999), e.g. `+99999999d`.
    #[error("--{flag} {value:?}: the date is out of range")]
    OutOfRange { flag: &'static str, value: String },
}

impl DateError {
    /// How to fix it, where the message does not already say (an invalid form lists the
    /// accepted ones itself).
    pub fn hint(&self) -> Option<String> {
        match self {
            DateError::Invalid { .. } => None,
            DateError::OutOfRange { .. } => {
                Some(format!("give a date before the year 9999; accepted forms: {DATE_FORMS}"))
            }
        }
    }
}

/// Parses the `--due`/`--defer` forms of beads: `+6h`, `+1d`, `+2w`, `+30m`, `tomorrow`,
/// `today`, `next monday`, `monday`, `2025-01-15`, or RFC 3339. Relative dates resolve in the
/// local time zone. Returns `None` for an empty string, which clears the field.
pub fn parse_user_date(
    flag: &'static str,
    value: &str,
    now: Timestamp,
) -> Result<Option<Timestamp>, DateError> {
    let text = value.trim().to_ascii_lowercase();
    if text.is_empty() {
        return Ok(None);
    }
    let fail = || DateError::Invalid { flag, value: value.to_string() };
    let out_of_range = || DateError::OutOfRange { flag, value: value.to_string() };
    let zone = TimeZone::try_system().unwrap_or(TimeZone::UTC);
    let local_now = now.to_zoned(zone.clone());
    if let Some(rest) = text.strip_prefix('+') {
        let span = match parse_offset(rest).ok_or_else(fail)? {
            Offset::InRange(span) => span,
            Offset::OutOfRange => return Err(out_of_range()),
        };
        return local_now
            .checked_add(span)
            .map(|z| Some(z.timestamp()))
            .map_err(|_| out_of_range());
    }
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(Some(at));
    }
    if let Ok(at) = value.trim().parse::<Timestamp>() {
        return Ok(Some(at));
    }
    let date = match text.as_str() {
        "today" => local_now.date(),
        "tomorrow" => local_now.date().tomorrow().map_err(|_| out_of_range())?,
        other => match other.strip_prefix("next ").unwrap_or(other).parse::<WeekdayName>() {
            Ok(WeekdayName(day)) => next_weekday(&local_now, day).ok_or_else(out_of_range)?,
            Err(()) => other.parse::<Date>().map_err(|_| fail())?,
        },
    };
    start_of_day(date, &zone).map(Some).ok_or_else(out_of_range)
}

/// The forms `--since` accepts, for messages.
pub const SINCE_FORMS: &str = "7d, 24h, 30m, 2w, today, monday, 2025-01-15, 2025-01-15T10:00:00Z";

/// Parses a `--since` value: a duration back from `now` (`7d`, `24h`, `30m`, `2w`, with or
/// without a leading `-`), or a date as [`parse_user_date`] reads it (`2025-01-15`, `today`,
/// RFC 3339). Relative dates resolve in the local time zone.
pub fn parse_since(value: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = value.trim().to_ascii_lowercase();
    let invalid = || format!("invalid --since {value:?}; examples: {SINCE_FORMS}");
    let out_of_range = || format!("--since {value:?}: the date is out of range");
    let offset = text.strip_prefix('-').unwrap_or(&text);
    if offset.starts_with(|c: char| c.is_ascii_digit()) && !offset.contains(['-', ':', 't']) {
        let span = match parse_offset(offset).ok_or_else(invalid)? {
            Offset::InRange(span) => span,
            Offset::OutOfRange => return Err(out_of_range()),
        };
        let zone = TimeZone::try_system().unwrap_or(TimeZone::UTC);
        return now
            .to_zoned(zone)
            .checked_sub(span)
            .map(|z| z.timestamp())
            .map_err(|_| out_of_range());
    }
    match parse_user_date("since", value, now) {
        Ok(Some(at)) if at <= now => Ok(at),
        // A day name means the last one: dates otherwise read it as the next.
        Ok(Some(at))
            if text.strip_prefix("next ").is_none() && text.parse::<WeekdayName>().is_ok() =>
        {
            let zone = TimeZone::try_system().unwrap_or(TimeZone::UTC);
            let week = Span::new().days(7);
            at.to_zoned(zone).checked_sub(week).map(|z| z.timestamp()).map_err(|_| out_of_range())
        }
        Ok(Some(_)) => Err(format!("--since {value:?} is in the future; examples: {SINCE_FORMS}")),
        Ok(None) => Err(invalid()),
        Err(DateError::OutOfRange { .. }) => Err(out_of_range()),
        Err(DateError::Invalid { .. }) => Err(invalid()),
    }
}

/// A relative offset (`6h`, `2w`) as parsed: a span, or a well-formed amount too large for
/// one.
enum Offset {
    InRange(Span),
    OutOfRange,
}

/// Parses the part of `+6h` after the `+`. `None` when it is not an offset at all. Every
/// conversion is checked: jiff's `ToSpan` helpers panic on amounts past their unit's limit,
/// so the fallible `try_*` setters are used, and an amount with more digits than an `i64`
/// holds is out of range, not malformed.
fn parse_offset(text: &str) -> Option<Offset> {
    let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
    let digits = &text[..unit_at];
    if digits.is_empty() {
        return None;
    }
    let unit = &text[unit_at..];
    let set: fn(Span, i64) -> Result<Span, jiff::Error> = match unit {
        "m" | "min" | "mins" => Span::try_minutes,
        "h" | "hr" | "hrs" | "hour" | "hours" => Span::try_hours,
        "d" | "day" | "days" => Span::try_days,
        "w" | "week" | "weeks" => Span::try_weeks,
        _ => return None,
    };
    let Ok(amount) = digits.parse::<i64>() else { return Some(Offset::OutOfRange) };
    Some(set(Span::new(), amount).map_or(Offset::OutOfRange, Offset::InRange))
}

struct WeekdayName(jiff::civil::Weekday);

impl std::str::FromStr for WeekdayName {
    type Err = ();
    fn from_str(text: &str) -> Result<Self, ()> {
        use jiff::civil::Weekday::*;
        let day = match text {
            "monday" | "mon" => Monday,
            "tuesday" | "tue" => Tuesday,
            "wednesday" | "wed" => Wednesday,
            "thursday" | "thu" => Thursday,
            "friday" | "fri" => Friday,
            "saturday" | "sat" => Saturday,
            "sunday" | "sun" => Sunday,
            _ => return Err(()),
        };
        Ok(WeekdayName(day))
    }
}

fn next_weekday(now: &Zoned, day: jiff::civil::Weekday) -> Option<Date> {
    let today = now.date();
    let ahead = (day.to_monday_zero_offset() - today.weekday().to_monday_zero_offset() + 7) % 7;
    let ahead = if ahead == 0 { 7 } else { ahead };
    today.checked_add(i64::from(ahead).days()).ok()
}

fn start_of_day(date: Date, zone: &TimeZone) -> Option<Timestamp> {
    date.to_zoned(zone.clone()).ok().map(|z| z.timestamp())
}

/// Formats a timestamp as beads writes it: UTC with a `Z`.
pub fn format_utc(at: Timestamp) -> String {
    at.to_string()
}

/// Nanoseconds since the epoch, clamped into an `i64` (the range covers 1677–2262).
pub fn nanos(at: Timestamp) -> i64 {
    i64::try_from(at.as_nanosecond()).unwrap_or(if at.as_nanosecond() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-02T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn since_takes_a_duration_back_or_a_date() {
        let now = now();
        let at = |text: &str| parse_since(text, now).map(|t| t.to_string());
        assert_eq!(at("24h").as_deref(), Ok("2026-03-01T12:00:00Z"));
        assert_eq!(at("-30m").as_deref(), Ok("2026-03-02T11:30:00Z"));
        assert_eq!(at("2026-02-01T00:00:00Z").as_deref(), Ok("2026-02-01T00:00:00Z"));
        assert!(at("2026-02-01").is_ok());
        assert!(at("yesterday-ish").unwrap_err().contains("examples: 7d"));
        assert!(at("").is_err());
        assert!(at("99999999999w").unwrap_err().contains("out of range"));
        // Since a day: the last one, not the next (now is a Monday, 2 March 2026, noon).
        let monday = parse_since("monday", now).unwrap();
        let sunday = parse_since("sunday", now).unwrap();
        assert!(
            monday <= now && now.duration_since(monday) < jiff::SignedDuration::from_hours(37),
            "{monday}"
        );
        assert!(
            sunday < monday && monday.duration_since(sunday) < jiff::SignedDuration::from_hours(49),
            "{sunday}"
        );
        assert!(at("tomorrow").unwrap_err().contains("in the future"));
        assert!(at("2099-01-01").unwrap_err().contains("in the future"));
    }

    #[test]
    fn relative_offsets() {
        let due = parse_user_date("due", "+6h", now()).unwrap().unwrap();
        assert_eq!(due, "2026-03-02T18:00:00Z".parse::<Timestamp>().unwrap());
        let due = parse_user_date("due", "+2w", now()).unwrap().unwrap();
        assert_eq!((due - now()).get_hours(), 0);
        assert!(due > now());
    }

    #[test]
    fn absolute_dates_and_clearing() {
        assert!(parse_user_date("due", "2025-01-15", now()).unwrap().is_some());
        assert!(parse_user_date("due", "2025-01-15T10:00:00Z", now()).unwrap().is_some());
        assert!(parse_user_date("defer", "", now()).unwrap().is_none());
        assert!(parse_user_date("due", "next monday", now()).unwrap().unwrap() > now());
        let err = parse_user_date("due", "someday", now()).unwrap_err();
        assert!(err.to_string().starts_with("invalid --due format \"someday\""));
    }

    #[test]
    fn offsets_past_the_calendar_are_out_of_range_not_panics() {
        for (flag, value) in [
            ("due", "+99999999d"),
            ("defer", "+99999999w"),
            ("due", "+999999999999h"),
            ("due", "+99999999999999999999999m"),
            ("due", "+3000000d"),
        ] {
            let err = parse_user_date(flag, value, now()).unwrap_err();
            assert_eq!(err.to_string(), format!("--{flag} {value:?}: the date is out of range"));
        }
    }
}

//! The units of the tasks view, read at a glance: times of day, durations, token counts and
//! costs, shaped for a column. The view fills its rows with them; the renderer and the watch
//! screen print them.

use jiff::Timestamp;

/// `14:02:11` today, else `Mar 01 14:02` (local time).
pub fn short_time(at: Timestamp, now: Timestamp) -> String {
    let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let (at, now) = (at.to_zoned(zone.clone()), now.to_zoned(zone));
    if at.date() == now.date() {
        at.strftime("%H:%M:%S").to_string()
    } else {
        at.strftime("%b %d %H:%M").to_string()
    }
}

/// `42s`, `3m05s`, `2h07m`, `3d04h`.
pub fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// `950`, `12.3k`, `1.2M`.
pub fn tokens(count: u64) -> String {
    match count {
        0..1000 => count.to_string(),
        1000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

/// `$0.013`, `$12.40`, or `-` when unknown.
pub fn cost(usd: Option<f64>) -> String {
    match usd {
        None => "-".to_owned(),
        Some(usd) if usd < 1.0 => format!("${usd:.3}"),
        Some(usd) => format!("${usd:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_at_a_glance() {
        assert_eq!(duration(42), "42s");
        assert_eq!(duration(185), "3m05s");
        assert_eq!(duration(7620), "2h07m");
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(1_200_000), "1.2M");
        assert_eq!(cost(Some(0.0125)), "$0.013");
        assert_eq!(cost(Some(12.4)), "$12.40");
        assert_eq!(cost(None), "-");
    }
}

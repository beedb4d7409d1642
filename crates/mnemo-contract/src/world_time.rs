//! World time: when a memory's fact holds in the world (its validity interval), and the date
//! expressions a turn states it with, resolved against the turn's own time.
//!
//! A memory has two clocks. System time is memory's own (recorded, superseded, tombstoned:
//! `Memory::created_at` and the tombstone's time). World time is this module's: an optional
//! interval `[from, to)` during which the fact is true, stated by the turn ("I lived in Lisbon
//! from 2019 to 2021", "starting next Monday the standup moves to 10:00").
//!
//! Date expressions (English, case-insensitive), each naming a span of days:
//!
//! | expression | span |
//! |---|---|
//! | `2021-03-04`, `4 March 2021`, `March 4, 2021`, `March 4` (the turn's year) | that day |
//! | `2021-03`, `March 2021` | that month |
//! | `2021` (a year 1900–2199, only after a word that introduces a time) | that year |
//! | `today`, `yesterday`, `tomorrow` | that day |
//! | `next Friday` / `last Friday` | the first Friday after / before the turn's day |
//! | `this Friday`, `coming Friday`, `Friday` after an interval word | the first Friday on or after it |
//! | `next` / `last` / `this` `week` / `month` / `year` | that calendar week (Monday first), month, year |
//! | `in two weeks`, `in 3 days`, `in a month` | the day that far after |
//! | `two weeks ago`, `3 days ago`, `a year ago` | the day that far before |
//!
//! Interval phrases built from them (see [`stated_validity`]): `from X to|until|till|through Y`
//! and `between X and Y` (both ends inclusive: `[X's first day, the day after Y's last)`),
//! `since X`, `starting X`, `starting on|from X`, `beginning X`, `effective X`, `as of X`
//! (`[X, open)`), `until|till|through X` (`[open, the day after X's last)`).
use serde::{Deserialize, Serialize};
use time::{Date, Duration, Month, OffsetDateTime, Weekday};

use crate::time::{Timestamp, DAY_MS};

/// When a fact holds in the world: `[from, to)`, either end open. The default (both open) is
/// "not stated": true whenever memory holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Validity {
    /// The first instant it holds (None: not stated, since always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Timestamp>,
    /// The first instant it no longer holds (None: not stated, still).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Timestamp>,
}

impl Validity {
    /// Neither end stated.
    pub fn is_unstated(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }
    /// Whether the fact holds in the world at `t`.
    pub fn holds_at(&self, t: Timestamp) -> bool {
        self.from.is_none_or(|f| f <= t) && self.to.is_none_or(|u| t < u)
    }
    /// An interval that ends before it starts (or at its start) is refused, naming both ends.
    pub fn check(&self) -> Result<(), String> {
        match (self.from, self.to) {
            (Some(f), Some(u)) if u <= f => {
                Err(format!("the validity interval ends ({u}) at or before it starts ({f})"))
            }
            _ => Ok(()),
        }
    }
    /// This interval closed by a successor valid from `next_from`: the end stays if stated,
    /// else becomes the successor's start (when after this one's start).
    pub fn closed_by(self, next_from: Option<Timestamp>) -> Validity {
        match (self.to, next_from) {
            (None, Some(n)) if self.from.is_none_or(|f| f < n) => Validity { to: Some(n), ..self },
            _ => self,
        }
    }
    /// "from 2019-01-01 until 2022-01-01", "from 2026-12-14", "until …", or "" when unstated.
    pub fn describe(&self) -> String {
        match (self.from, self.to) {
            (Some(f), Some(u)) => format!("valid from {} until {}", day_text(f), day_text(u)),
            (Some(f), None) => format!("valid from {}", day_text(f)),
            (None, Some(u)) => format!("valid until {}", day_text(u)),
            (None, None) => String::new(),
        }
    }
}

/// A time as a date when it is a midnight UTC, else RFC 3339.
pub fn day_text(t: Timestamp) -> String {
    if t.0.rem_euclid(DAY_MS) == 0 {
        t.to_rfc3339().split('T').next().unwrap_or_default().to_string()
    } else {
        t.to_rfc3339()
    }
}

/// How a model writes an interval's end (`valid_to`): the last day it holds when the end is
/// a midnight UTC (the end is the midnight after that day), else the time in RFC 3339.
pub fn last_day_text(to: Timestamp) -> String {
    if to.0.rem_euclid(DAY_MS) == 0 {
        day_text(to.plus_millis(-DAY_MS))
    } else {
        to.to_rfc3339()
    }
}

/// A span of whole days `[first, after)` named by a date expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaySpan {
    /// Its first day.
    pub first: Date,
    /// The day after its last.
    pub after: Date,
}

impl DaySpan {
    fn day(d: Date) -> Self {
        DaySpan { first: d, after: d.next_day().unwrap_or(d) }
    }
    /// The first day's midnight UTC.
    pub fn start(&self) -> Timestamp {
        midnight(self.first)
    }
    /// The midnight UTC after the last day.
    pub fn end(&self) -> Timestamp {
        midnight(self.after)
    }
    /// "2026-12-11", or "2026-12-07 to 2026-12-13" for a longer span.
    pub fn describe(&self) -> String {
        let last = self.after.previous_day().unwrap_or(self.after);
        if last == self.first {
            self.first.to_string()
        } else {
            format!("{} to {last}", self.first)
        }
    }
}

fn midnight(d: Date) -> Timestamp {
    Timestamp(d.midnight().assume_utc().unix_timestamp() * 1000)
}

fn date_of(t: Timestamp) -> Date {
    OffsetDateTime::from_unix_timestamp(t.0.div_euclid(1000)).map(|d| d.date()).unwrap_or(Date::MIN)
}

/// A word of a text and where it is.
#[derive(Clone, Debug)]
struct Word<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

/// The text's words (letters, digits, '-' inside a word), lower-cased on comparison.
fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        let part = c.is_alphanumeric() || (c == '-' && start.is_some());
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let w = text[s..i].trim_end_matches('-');
                out.push(Word { text: w, start: s, end: s + w.len() });
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn is(w: Option<&Word<'_>>, any: &[&str]) -> bool {
    w.is_some_and(|w| any.iter().any(|a| w.text.eq_ignore_ascii_case(a)))
}

/// The month names, January first (lower case).
pub const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The weekday names, Monday first (lower case).
pub const WEEKDAY_NAMES: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

fn month_named(w: &str) -> Option<Month> {
    let w = w.to_ascii_lowercase();
    let w = w.trim_end_matches('.');
    MONTH_NAMES
        .iter()
        .position(|n| *n == w || (w.len() == 3 && n.starts_with(w) && w != "may") || (w == "sept" && *n == "september"))
        .and_then(|i| Month::try_from(i as u8 + 1).ok())
}

fn weekday_named(w: &str) -> Option<Weekday> {
    let w = w.to_ascii_lowercase();
    let i = WEEKDAY_NAMES.iter().position(|n| *n == w || (w.len() == 3 && n.starts_with(&w)))?;
    Some(Weekday::Monday.nth_next(i as u8))
}

fn number_word(w: &str) -> Option<i64> {
    const N: [&str; 13] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    let w = w.to_ascii_lowercase();
    if w == "a" || w == "an" {
        return Some(1);
    }
    if let Some(i) = N.iter().position(|n| *n == w) {
        return Some(i as i64);
    }
    w.parse::<i64>().ok().filter(|n| (1..=1000).contains(n))
}

fn add_months(d: Date, months: i64) -> Date {
    let total = i64::from(d.year()) * 12 + i64::from(u8::from(d.month())) - 1 + months;
    let (y, m) = (total.div_euclid(12) as i32, (total.rem_euclid(12) + 1) as u8);
    let month = Month::try_from(m).unwrap_or(Month::January);
    let last = month.length(y);
    Date::from_calendar_date(y, month, d.day().min(last)).unwrap_or(d)
}

fn month_span(y: i32, m: Month) -> Option<DaySpan> {
    let first = Date::from_calendar_date(y, m, 1).ok()?;
    Some(DaySpan { first, after: add_months(first, 1) })
}

fn year_span(y: i32) -> Option<DaySpan> {
    Some(DaySpan {
        first: Date::from_calendar_date(y, Month::January, 1).ok()?,
        after: Date::from_calendar_date(y + 1, Month::January, 1).ok()?,
    })
}

fn day_number(w: &str) -> Option<u8> {
    let w = w.to_ascii_lowercase();
    let digits = w.trim_end_matches("st").trim_end_matches("nd").trim_end_matches("rd").trim_end_matches("th");
    digits.parse::<u8>().ok().filter(|d| (1..=31).contains(d))
}

fn year_number(w: &str) -> Option<i32> {
    (w.len() == 4).then(|| w.parse::<i32>().ok()).flatten().filter(|y| (1900..=2199).contains(y))
}

/// The date expression starting at word `i`, resolved against `today`: its span and how many
/// words it took. `bare_years`: whether a lone year counts (only after an interval word: "in
/// 2019 cars" is not a date, "from 2019" is).
fn date_at(ws: &[Word<'_>], i: usize, today: Date, bare_years: bool) -> Option<(DaySpan, usize)> {
    let w = ws.get(i)?;
    let lower = w.text.to_ascii_lowercase();
    let next = ws.get(i + 1);
    // ISO forms.
    if let Some(span) = iso(&lower) {
        return Some((span, 1));
    }
    match lower.as_str() {
        "today" | "tonight" => return Some((DaySpan::day(today), 1)),
        "yesterday" => return Some((DaySpan::day(today.previous_day()?), 1)),
        "tomorrow" => return Some((DaySpan::day(today.next_day()?), 1)),
        // "on Friday" is not resolved: said of the past ("I met Ben on Friday") or of the future,
        // a wrong day would be worse than none.
        "next" | "last" | "this" | "coming" => {
            let n = next?;
            if let Some(day) = weekday_named(n.text) {
                let d = match lower.as_str() {
                    "next" => first_after(today, day),
                    "last" => first_before(today, day),
                    _ => first_on_or_after(today, day),
                };
                return Some((DaySpan::day(d), 2));
            }
            if lower == "coming" {
                return None;
            }
            let shift = match lower.as_str() {
                "next" => 1,
                "last" => -1,
                _ => 0,
            };
            let unit = n.text.to_ascii_lowercase();
            let span = match unit.as_str() {
                "week" => {
                    let monday = today - Duration::days(i64::from(today.weekday().number_days_from_monday()));
                    let first = monday + Duration::weeks(shift);
                    DaySpan { first, after: first + Duration::weeks(1) }
                }
                "month" => {
                    let d = add_months(today, shift);
                    month_span(d.year(), d.month())?
                }
                "year" => year_span(today.year() + shift as i32)?,
                _ => return None,
            };
            return Some((span, 2));
        }
        "in" => {
            let (n, unit) = (number_word(next?.text)?, ws.get(i + 2)?);
            return Some((DaySpan::day(shifted(today, n, unit.text)?), 3));
        }
        _ => {}
    }
    // "two weeks ago".
    if let (Some(n), Some(unit)) = (number_word(&lower), next) {
        if is(ws.get(i + 2), &["ago"]) {
            return Some((DaySpan::day(shifted(today, -n, unit.text)?), 3));
        }
    }
    // "4 March 2021", "4 March", "March 4, 2021", "March 4", "March 2021".
    if let (Some(d), Some(m)) = (day_number(&lower), next.and_then(|n| month_named(n.text))) {
        if let Some(y) = ws.get(i + 2).and_then(|y| year_number(y.text)) {
            return Some((DaySpan::day(Date::from_calendar_date(y, m, d).ok()?), 3));
        }
        return Some((DaySpan::day(Date::from_calendar_date(today.year(), m, d).ok()?), 2));
    }
    if let Some(m) = month_named(&lower) {
        // "may" alone is a verb too: a month name needs a day or a year beside it.
        if let Some(d) = next.and_then(|n| day_number(n.text)) {
            if let Some(y) = ws.get(i + 2).and_then(|y| year_number(y.text)) {
                return Some((DaySpan::day(Date::from_calendar_date(y, m, d).ok()?), 3));
            }
            return Some((DaySpan::day(Date::from_calendar_date(today.year(), m, d).ok()?), 2));
        }
        if let Some(y) = next.and_then(|n| year_number(n.text)) {
            return Some((month_span(y, m)?, 2));
        }
        return None;
    }
    if bare_years {
        if let Some(y) = year_number(&lower) {
            return Some((year_span(y)?, 1));
        }
        if let Some(day) = weekday_named(&lower) {
            return Some((DaySpan::day(first_on_or_after(today, day)), 1));
        }
    }
    None
}

fn iso(w: &str) -> Option<DaySpan> {
    let parts: Vec<&str> = w.split('-').collect();
    match parts.as_slice() {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            let month = Month::try_from(m.parse::<u8>().ok()?).ok()?;
            Some(DaySpan::day(Date::from_calendar_date(y.parse().ok()?, month, d.parse().ok()?).ok()?))
        }
        [y, m] if y.len() == 4 && m.len() == 2 => {
            month_span(year_number(y)?, Month::try_from(m.parse::<u8>().ok()?).ok()?)
        }
        _ => None,
    }
}

fn shifted(today: Date, n: i64, unit: &str) -> Option<Date> {
    let unit = unit.to_ascii_lowercase();
    Some(match unit.trim_end_matches('s') {
        "day" => today + Duration::days(n),
        "week" => today + Duration::weeks(n),
        "month" => add_months(today, n),
        "year" => add_months(today, n * 12),
        _ => return None,
    })
}

fn first_after(today: Date, day: Weekday) -> Date {
    let mut d = today.next_day().unwrap_or(today);
    while d.weekday() != day {
        d = d.next_day().unwrap_or(d);
    }
    d
}

fn first_on_or_after(today: Date, day: Weekday) -> Date {
    if today.weekday() == day {
        today
    } else {
        first_after(today, day)
    }
}

fn first_before(today: Date, day: Weekday) -> Date {
    let mut d = today.previous_day().unwrap_or(today);
    while d.weekday() != day {
        d = d.previous_day().unwrap_or(d);
    }
    d
}

/// A date expression found in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundDate {
    /// Where it is (byte range).
    pub range: std::ops::Range<usize>,
    /// The days it names.
    pub span: DaySpan,
    /// Whether it is relative to the turn's time ("yesterday", "next Friday", "in two weeks").
    pub relative: bool,
}

/// Every date expression of `text`, resolved against `at` (the turn's time), left to right.
pub fn find_dates(text: &str, at: Timestamp) -> Vec<FoundDate> {
    let ws = words(text);
    let today = date_of(at);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        match date_at(&ws, i, today, false) {
            Some((span, n)) => {
                let range = ws[i].start..ws[i + n - 1].end;
                let relative = is_relative(&ws[i..i + n]);
                out.push(FoundDate { range, span, relative });
                i += n;
            }
            None => i += 1,
        }
    }
    out
}

fn is_relative(ws: &[Word<'_>]) -> bool {
    ws.iter().any(|w| {
        ["today", "tonight", "yesterday", "tomorrow", "next", "last", "this", "in", "ago", "coming"]
            .iter()
            .any(|r| w.text.eq_ignore_ascii_case(r))
    }) || (ws.len() == 2 && day_number(ws[0].text).is_some() && month_named(ws[1].text).is_some())
        || (ws.len() == 2 && month_named(ws[0].text).is_some() && day_number(ws[1].text).is_some())
}

/// `text` with each relative date expression followed by the date it means, in parentheses
/// ("next Friday" → "next Friday (2026-12-11)"), so the memory still says the right day when
/// recalled months later. Expressions already followed by a parenthesis are left alone.
pub fn with_dates_resolved(text: &str, at: Timestamp) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for f in find_dates(text, at).into_iter().filter(|f| f.relative) {
        if text[f.range.end..].trim_start().starts_with('(') {
            continue;
        }
        out.push_str(&text[last..f.range.end]);
        out.push_str(&format!(" ({})", f.span.describe()));
        last = f.range.end;
    }
    out.push_str(&text[last..]);
    out
}

/// The validity interval `text` states, resolved against `at` (see the module's table): the
/// first interval phrase found, or unstated.
pub fn stated_validity(text: &str, at: Timestamp) -> Validity {
    let ws = words(text);
    let today = date_of(at);
    for (i, w) in ws.iter().enumerate() {
        let lower = w.text.to_ascii_lowercase();
        match lower.as_str() {
            "from" | "between" => {
                let Some((from, n)) = date_at(&ws, i + 1, today, true) else { continue };
                let joint = ws.get(i + 1 + n);
                let closes =
                    if lower == "from" { &["to", "until", "till", "through", "thru"][..] } else { &["and"][..] };
                if is(joint, closes) {
                    // "from Monday to Friday" is a weekly schedule, not an interval.
                    let weekly = |j: usize| ws.get(j).is_some_and(|w| weekday_named(w.text).is_some());
                    if weekly(i + 1) && weekly(i + 2 + n) {
                        continue;
                    }
                    if let Some((to, _)) = date_at(&ws, i + 2 + n, today, true) {
                        return Validity { from: Some(from.start()), to: Some(to.end()) };
                    }
                }
                if lower == "from" {
                    return Validity { from: Some(from.start()), to: None };
                }
            }
            "since" | "beginning" | "effective" => {
                if let Some((from, _)) = date_at(&ws, i + 1, today, true) {
                    return Validity { from: Some(from.start()), to: None };
                }
            }
            "starting" | "as" => {
                let skip = usize::from(is(ws.get(i + 1), &["on", "from", "of"]));
                if lower == "as" && skip == 0 {
                    continue;
                }
                if let Some((from, _)) = date_at(&ws, i + 1 + skip, today, true) {
                    return Validity { from: Some(from.start()), to: None };
                }
            }
            "until" | "till" | "through" => {
                if let Some((to, _)) = date_at(&ws, i + 1, today, true) {
                    return Validity { from: None, to: Some(to.end()) };
                }
            }
            _ => {}
        }
    }
    Validity::default()
}

/// A date given on its own (a grammar modifier, a model's `valid_from`): an ISO date, month or
/// year, RFC 3339, or an expression of the module's table with '-' or '_' for spaces
/// (`next-friday`, `in-2-weeks`), resolved against `at`. The span, or why not.
pub fn parse_date(given: &str, at: Timestamp) -> Result<DaySpan, String> {
    let g = given.trim();
    if let Ok(t) = Timestamp::parse_rfc3339(g) {
        return Ok(DaySpan::day(date_of(t)));
    }
    let spaced = g.replace(['_'], " ");
    let spaced = if iso(&spaced).is_some() { spaced } else { spaced.replace('-', " ") };
    let ws = words(&spaced);
    match date_at(&ws, 0, date_of(at), true) {
        Some((span, n)) if n == ws.len() => Ok(span),
        _ => Err(format!(
            "{given:?} is not a date: expected YYYY-MM-DD, YYYY-MM, YYYY, RFC 3339, or a relative date \
             such as yesterday, next-friday, in-2-weeks, 3-days-ago"
        )),
    }
}

/// A time as the instant it names: an RFC 3339 time exactly, any other date its first day's
/// midnight UTC (for `from`) or the midnight after its last day (for `to`).
pub fn parse_bound(given: &str, at: Timestamp, end: bool) -> Result<Timestamp, String> {
    if let Ok(t) = Timestamp::parse_rfc3339(given.trim()) {
        if given.contains('T') {
            return Ok(t);
        }
    }
    parse_date(given, at).map(|s| if end { s.end() } else { s.start() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Friday 2026-12-04, 15:00 UTC.
    fn at() -> Timestamp {
        Timestamp::parse_rfc3339("2026-12-04T15:00:00Z").unwrap()
    }
    fn day(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(&format!("{s}T00:00:00Z")).unwrap()
    }

    #[test]
    fn relative_dates_resolve_against_the_turns_day() {
        let cases = [
            ("yesterday", "2026-12-03"),
            ("today", "2026-12-04"),
            ("tomorrow", "2026-12-05"),
            ("next friday", "2026-12-11"),
            ("next monday", "2026-12-07"),
            ("last friday", "2026-11-27"),
            ("this friday", "2026-12-04"),
            ("in two weeks", "2026-12-18"),
            ("in 3 days", "2026-12-07"),
            ("in a month", "2027-01-04"),
            ("two weeks ago", "2026-11-20"),
            ("next week", "2026-12-07 to 2026-12-13"),
            ("last month", "2026-11-01 to 2026-11-30"),
            ("next year", "2027-01-01 to 2027-12-31"),
            ("4 March 2021", "2021-03-04"),
            ("March 4, 2021", "2021-03-04"),
            ("March 2021", "2021-03-01 to 2021-03-31"),
            ("2021-03-04", "2021-03-04"),
        ];
        for (text, want) in cases {
            let found = find_dates(text, at());
            assert_eq!(found.len(), 1, "{text}: {found:?}");
            assert_eq!(found[0].span.describe(), want, "{text}");
            assert_eq!(found[0].range, 0..text.len(), "{text}");
        }
    }

    #[test]
    fn relative_dates_are_written_beside_the_words_and_absolute_ones_left_alone() {
        let t = "I saw Ben yesterday; the review is next Friday, not on 2026-12-20. May I?";
        assert_eq!(
            with_dates_resolved(t, at()),
            "I saw Ben yesterday (2026-12-03); the review is next Friday (2026-12-11), not on 2026-12-20. May I?"
        );
        // Idempotent: a resolved text is not annotated twice.
        let once = with_dates_resolved(t, at());
        assert_eq!(with_dates_resolved(&once, at()), once);
        assert_eq!(with_dates_resolved("In 2019 cars were slower.", at()), "In 2019 cars were slower.");
        // Past or future is not known: left as said.
        assert_eq!(with_dates_resolved("I met Ben on Friday.", at()), "I met Ben on Friday.");
    }

    #[test]
    fn interval_phrases_give_a_validity() {
        let v = stated_validity("I lived in Lisbon from 2019 to 2021.", at());
        assert_eq!(v, Validity { from: Some(day("2019-01-01")), to: Some(day("2022-01-01")) });
        let v = stated_validity("Starting next Monday the standup moves to 10:00", at());
        assert_eq!(v, Validity { from: Some(day("2026-12-07")), to: None });
        let v = stated_validity("The office is closed between 24 December and 2 January 2027", at());
        assert_eq!(v, Validity { from: Some(day("2026-12-24")), to: Some(day("2027-01-03")) });
        let v = stated_validity("Ben covers support until Friday", at());
        assert_eq!(v, Validity { from: None, to: Some(day("2026-12-05")) });
        let v = stated_validity("Ana has worked here since March 2021", at());
        assert_eq!(v, Validity { from: Some(day("2021-03-01")), to: None });
        assert!(stated_validity("Ben likes tea from China", at()).is_unstated());
        assert!(
            stated_validity("Ana works at the clinic from Monday to Friday", at()).is_unstated(),
            "a weekly schedule"
        );
        assert!(stated_validity("The shop is open from 9 to 5", at()).is_unstated());
        assert!(stated_validity("As the manager said", at()).is_unstated());
    }

    #[test]
    fn a_validity_holds_inside_its_interval_and_a_successor_closes_it() {
        let v = Validity { from: Some(day("2019-01-01")), to: Some(day("2022-01-01")) };
        assert!(!v.holds_at(day("2018-06-01")));
        assert!(v.holds_at(day("2020-06-01")));
        assert!(!v.holds_at(day("2022-01-01")));
        assert!(Validity::default().holds_at(day("1900-01-01")));
        let open = Validity { from: Some(day("2019-01-01")), to: None };
        assert_eq!(open.closed_by(Some(day("2023-01-01"))).to, Some(day("2023-01-01")));
        assert_eq!(v.closed_by(Some(day("2023-01-01"))), v, "a stated end stays");
        assert_eq!(open.closed_by(Some(day("2018-01-01"))), open, "a successor before it does not close it");
        assert!(Validity { from: Some(day("2022-01-01")), to: Some(day("2019-01-01")) }.check().is_err());
        assert_eq!(v.describe(), "valid from 2019-01-01 until 2022-01-01");
    }

    #[test]
    fn a_date_on_its_own_parses_or_says_why_not() {
        assert_eq!(parse_bound("next-friday", at(), false), Ok(day("2026-12-11")));
        assert_eq!(parse_bound("in-2-weeks", at(), false), Ok(day("2026-12-18")));
        assert_eq!(parse_bound("2019", at(), false), Ok(day("2019-01-01")));
        assert_eq!(parse_bound("2021", at(), true), Ok(day("2022-01-01")));
        assert_eq!(parse_bound("2021-03", at(), true), Ok(day("2021-04-01")));
        assert_eq!(parse_bound("2021-03-04", at(), true), Ok(day("2021-03-05")));
        assert_eq!(
            parse_bound("2021-03-04T10:00:00Z", at(), true),
            Timestamp::parse_rfc3339("2021-03-04T10:00:00Z").map_err(|e| e.to_string())
        );
        let e = parse_bound("someday", at(), false).unwrap_err();
        assert!(e.contains("\"someday\" is not a date") && e.contains("next-friday"), "{e}");
    }
}

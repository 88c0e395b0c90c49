//! A syntax check for the cron expressions of Elsa's `Cron` trigger.
//!
//! Elsa's default scheduler parses with Cronos in its with-seconds format: six fields
//! (second minute hour day-of-month month day-of-week). The Quartz scheduler reads six fields
//! plus an optional year. Both accept the classic five-field form only after a seconds field
//! is added, so five fields (and the Quartz-only seventh field) parse here but are reported as
//! a format the default scheduler rejects.
//!
//! Accepted per field: `*`, `?` (day fields), numbers, names (`JAN`-`DEC`, `SUN`-`SAT`),
//! ranges `a-b` (reversed ranges too, as Cronos allows), steps `*/n`, `a/n`, `a-b/n`, lists
//! `a,b`, and the day specials `L`, `L-n`, `LW`, `nW` (day of month) and `nL`, `n#k` (day of
//! week). The macros `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
//! `@hourly`, `@every_minute` and `@every_second` are accepted as Cronos does.

use std::fmt;

/// How a cron expression that parsed is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CronLayout {
    /// `second minute hour day-of-month month day-of-week`: what Elsa's schedulers read.
    WithSeconds,
    /// The classic five fields, without seconds.
    WithoutSeconds,
    /// Six fields plus a year: Quartz only.
    WithYear,
    /// A `@daily`-style macro.
    Macro,
}

/// Why a cron expression does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CronError(String);

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy)]
enum Field {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
    Year,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
            Self::Year => "year",
        }
    }

    fn range(self) -> (u32, u32) {
        match self {
            Self::Second | Self::Minute => (0, 59),
            Self::Hour => (0, 23),
            Self::DayOfMonth => (1, 31),
            Self::Month => (1, 12),
            // Cronos: 0-7 with 0 and 7 both Sunday; Quartz: 1-7.
            Self::DayOfWeek => (0, 7),
            Self::Year => (1970, 2099),
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            Self::Month => &[
                "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
            ],
            Self::DayOfWeek => &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
            _ => &[],
        }
    }
}

const MACROS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
    "@every_minute",
    "@every_second",
];

/// Checks the syntax of a cron expression and says how it is laid out.
pub(crate) fn parse(expression: &str) -> Result<CronLayout, CronError> {
    let expression = expression.trim();
    if expression.is_empty() {
        return Err(CronError("the expression is empty".into()));
    }
    if expression.starts_with('@') {
        return if MACROS.iter().any(|m| m.eq_ignore_ascii_case(expression)) {
            Ok(CronLayout::Macro)
        } else {
            Err(CronError(format!("unknown macro `{expression}`")))
        };
    }
    let parts: Vec<&str> = expression.split_whitespace().collect();
    use Field::*;
    let (fields, layout): (&[Field], CronLayout) = match parts.len() {
        5 => (
            &[Minute, Hour, DayOfMonth, Month, DayOfWeek],
            CronLayout::WithoutSeconds,
        ),
        6 => (
            &[Second, Minute, Hour, DayOfMonth, Month, DayOfWeek],
            CronLayout::WithSeconds,
        ),
        7 => (
            &[Second, Minute, Hour, DayOfMonth, Month, DayOfWeek, Year],
            CronLayout::WithYear,
        ),
        n => {
            return Err(CronError(format!(
                "expected 6 fields (second minute hour day-of-month month day-of-week), found {n}"
            )));
        }
    };
    for (part, field) in parts.iter().zip(fields) {
        check_field(part, *field)
            .map_err(|why| CronError(format!("{} field `{part}`: {why}", field.name())))?;
    }
    Ok(layout)
}

fn check_field(text: &str, field: Field) -> Result<(), String> {
    for item in text.split(',') {
        if item.is_empty() {
            return Err("empty list item".into());
        }
        check_item(item, field)?;
    }
    Ok(())
}

fn check_item(item: &str, field: Field) -> Result<(), String> {
    let upper = item.to_ascii_uppercase();
    if let Some(special) = check_special(&upper, field) {
        return special;
    }
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => (base.to_ascii_uppercase(), Some(step)),
        None => (upper.clone(), None),
    };
    if let Some(step) = step {
        let (min, max) = field.range();
        let step: u32 = step
            .parse()
            .map_err(|_| format!("step `{step}` is not a number"))?;
        if step == 0 || step > max.saturating_sub(min).max(1) + 1 {
            return Err(format!("step {step} is out of range"));
        }
    }
    match base.as_str() {
        "*" => Ok(()),
        "?" if matches!(field, Field::DayOfMonth | Field::DayOfWeek) => Ok(()),
        "?" => Err("`?` is only allowed in the day fields".into()),
        _ => match base.split_once('-') {
            Some((from, to)) => {
                value(from, field)?;
                value(to, field)?;
                Ok(())
            }
            None => value(&base, field).map(|_| ()),
        },
    }
}

/// The day specials; `None` when the item is not one.
fn check_special(item: &str, field: Field) -> Option<Result<(), String>> {
    match field {
        Field::DayOfMonth => {
            if item == "L" || item == "LW" {
                return Some(Ok(()));
            }
            if let Some(offset) = item.strip_prefix("L-") {
                return Some(match offset.parse::<u32>() {
                    Ok(n) if n <= 30 => Ok(()),
                    _ => Err(format!("`L-{offset}` needs an offset of 0 to 30 days")),
                });
            }
            let day = item.strip_suffix('W')?;
            Some(value(day, field).map(|_| ()))
        }
        Field::DayOfWeek => {
            if item == "L" {
                return Some(Ok(()));
            }
            if let Some((day, nth)) = item.split_once('#') {
                return Some(value(day, field).and_then(|_| match nth.parse::<u32>() {
                    Ok(1..=5) => Ok(()),
                    _ => Err(format!("`#{nth}` must be 1 to 5")),
                }));
            }
            let day = item.strip_suffix('L')?;
            Some(value(day, field).map(|_| ()))
        }
        _ => None,
    }
}

/// A number or a name within the field's range.
fn value(text: &str, field: Field) -> Result<u32, String> {
    let (min, max) = field.range();
    if let Some(position) = field.names().iter().position(|name| *name == text) {
        let offset = if matches!(field, Field::Month) { 1 } else { 0 };
        return u32::try_from(position)
            .map(|p| p + offset)
            .map_err(|_| format!("`{text}` is out of range"));
    }
    let number: u32 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number or a name"))?;
    if (min..=max).contains(&number) {
        Ok(number)
    } else {
        Err(format!("{number} is outside {min}-{max}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_expressions_parse_with_their_layout() {
        let cases = [
            ("0 0 0 * * *", CronLayout::WithSeconds),
            ("0 0 */6 * * *", CronLayout::WithSeconds),
            ("0 0 0 * * MON", CronLayout::WithSeconds),
            ("0 0 9 * * MON-FRI", CronLayout::WithSeconds),
            ("0 0 0 1 */3 *", CronLayout::WithSeconds),
            ("0 0 0 L * *", CronLayout::WithSeconds),
            (
                "*/15 0-30/5 23-01 ? jan,Mar-DEC 5L",
                CronLayout::WithSeconds,
            ),
            ("0 0 12 15W * ?", CronLayout::WithSeconds),
            ("0 0 12 L-3 * 1#2", CronLayout::WithSeconds),
            ("0 30 17 ? * FRI 2030", CronLayout::WithYear),
            ("*/5 * * * *", CronLayout::WithoutSeconds),
            ("@daily", CronLayout::Macro),
            ("@Every_Minute", CronLayout::Macro),
        ];
        for (expression, layout) in cases {
            assert_eq!(parse(expression), Ok(layout), "{expression}");
        }
    }

    #[test]
    fn invalid_expressions_say_why() {
        let cases = [
            ("BadCronExpression", "found 1"),
            ("", "empty"),
            ("0 0 24 * * *", "hour field `24`: 24 is outside 0-23"),
            ("60 * * * * *", "second field"),
            ("0 0 0 0 * *", "day-of-month field `0`"),
            ("0 0 0 * 13 *", "month field"),
            ("0 0 0 * * 8", "day-of-week field"),
            ("0 0 0 * * FUN", "not a number or a name"),
            ("*/0 * * * * *", "step 0"),
            ("*/x * * * * *", "step `x`"),
            ("0 ? * * * *", "only allowed in the day fields"),
            ("0 0 0 1,,2 * *", "empty list item"),
            ("0 0 0 * * 1#6", "must be 1 to 5"),
            ("0 0 0 L-40 * *", "offset"),
            ("@sometimes", "unknown macro"),
            ("1 2 3 4 5 6 7 8", "found 8"),
        ];
        for (expression, why) in cases {
            let error = parse(expression).expect_err(expression);
            assert!(error.to_string().contains(why), "{expression}: {error}");
        }
    }
}

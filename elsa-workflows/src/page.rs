use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Offset/limit paging requested by a caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRequest {
    /// Number of items to skip.
    pub offset: usize,
    /// Maximum number of items to return.
    pub limit: usize,
}

impl PageRequest {
    /// The largest page any store hands out, whatever the caller asks for.
    pub const MAX_LIMIT: usize = 500;

    /// A page starting at `offset` holding at most `limit` items (capped at [`Self::MAX_LIMIT`]).
    pub fn new(offset: usize, limit: usize) -> Self {
        Self {
            offset,
            limit: limit.min(Self::MAX_LIMIT),
        }
    }

    /// Applies this page to an already filtered and ordered list.
    pub fn slice<T>(&self, items: Vec<T>) -> Page<T> {
        let total = items.len();
        let items = items
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        Page {
            items,
            total,
            offset: self.offset,
            limit: self.limit,
        }
    }
}

impl Default for PageRequest {
    fn default() -> Self {
        Self::new(0, 50)
    }
}

/// One page of results with the total count of matches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The items on this page.
    pub items: Vec<T>,
    /// How many items matched in all.
    pub total: usize,
    /// The offset this page starts at.
    pub offset: usize,
    /// The limit that was applied.
    pub limit: usize,
}

impl<T> Page<T> {
    /// Whether items exist beyond this page.
    pub fn has_more(&self) -> bool {
        self.offset + self.items.len() < self.total
    }

    /// Maps every item, keeping the paging information.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            offset: self.offset,
            limit: self.limit,
        }
    }
}

/// A closed time interval `[from, to]` in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeRange {
    /// Inclusive start.
    pub from: DateTime<Utc>,
    /// Inclusive end.
    pub to: DateTime<Utc>,
}

impl TimeRange {
    /// Whether `instant` lies inside the range.
    pub fn contains(&self, instant: DateTime<Utc>) -> bool {
        self.from <= instant && instant <= self.to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_reports_totals_and_more() {
        let page = PageRequest::new(2, 2).slice((0..5).collect::<Vec<_>>());
        assert_eq!(page.items, vec![2, 3]);
        assert_eq!(page.total, 5);
        assert!(page.has_more());
        let last = PageRequest::new(4, 2).slice((0..5).collect::<Vec<_>>());
        assert_eq!(last.items, vec![4]);
        assert!(!last.has_more());
    }

    #[test]
    fn limit_is_capped() {
        assert_eq!(PageRequest::new(0, 10_000).limit, PageRequest::MAX_LIMIT);
    }
}

//! Fetching an offset/limit window from Elsa's page-numbered lists.
//!
//! Elsa pages by a zero-based `page` and a `pageSize` (it skips `page * pageSize` items). A
//! window `[offset, offset + limit)` whose offset is a multiple of its limit is one page;
//! any other window spans two pages of `limit` items, and is cut out of them.

use crate::PageRequest;

/// The pages to request for one window, and how to cut the window out of their items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PagePlan {
    /// `(page, pageSize)` pairs, in order.
    pub pages: Vec<(usize, usize)>,
    skip: usize,
    take: usize,
}

impl PagePlan {
    /// The plan for `request` (already held to [`PageRequest::MAX_LIMIT`]).
    pub fn new(request: PageRequest) -> Self {
        let PageRequest { offset, limit } = request;
        // Elsa multiplies page by pageSize in a 32-bit integer; a window beyond that holds
        // nothing any Elsa store can return, and an empty window needs only the total.
        let beyond = offset.saturating_add(limit) > i32::MAX as usize;
        if limit == 0 || beyond {
            return Self {
                pages: vec![(0, 1)],
                skip: 0,
                take: 0,
            };
        }
        let (page, skip) = (offset / limit, offset % limit);
        let pages = if skip == 0 {
            vec![(page, limit)]
        } else {
            vec![(page, limit), (page + 1, limit)]
        };
        Self {
            pages,
            skip,
            take: limit,
        }
    }

    /// The window's items out of the items of the pages fetched, in order.
    pub fn cut<T>(&self, items: Vec<T>) -> Vec<T> {
        items.into_iter().skip(self.skip).take(self.take).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fetches `request` from `all` the way Elsa would serve each page.
    fn fetch(all: &[u32], request: PageRequest) -> Vec<u32> {
        let plan = PagePlan::new(request);
        let mut items = Vec::new();
        for (page, size) in &plan.pages {
            items.extend(all.iter().skip(page * size).take(*size).copied());
        }
        plan.cut(items)
    }

    #[test]
    fn every_window_is_cut_exactly() {
        let all: Vec<u32> = (0..23).collect();
        for offset in 0..30 {
            for limit in 0..12 {
                let expected: Vec<u32> = all.iter().skip(offset).take(limit).copied().collect();
                assert_eq!(
                    fetch(&all, PageRequest::new(offset, limit)),
                    expected,
                    "offset {offset}, limit {limit}"
                );
            }
        }
    }

    #[test]
    fn aligned_windows_need_one_page_and_others_two() {
        assert_eq!(PagePlan::new(PageRequest::new(20, 10)).pages, [(2, 10)]);
        assert_eq!(
            PagePlan::new(PageRequest::new(25, 10)).pages,
            [(2, 10), (3, 10)]
        );
        // No items wanted, or none Elsa could hold: the smallest page, for the total.
        assert_eq!(PagePlan::new(PageRequest::new(7, 0)).pages, [(0, 1)]);
        let far = PagePlan::new(PageRequest::new(usize::MAX - 3, 10));
        assert_eq!(far.pages, [(0, 1)]);
        assert!(far.cut(vec![1]).is_empty());
    }
}

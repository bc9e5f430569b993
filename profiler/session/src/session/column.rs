//! A session file's packed columns as the decoder reads them: in batches, in step with each
//! other, every value that indexes a table checked against it, every error one line naming
//! the field and entry.

use super::packed::{PackedError, Values};

/// What is wrong with a file's content, as one line.
pub(crate) type Invalid = String;

/// `value` as an index into a table of `len` entries; `what` names the field for the error (a
/// closure, so the hot path over a million samples formats nothing).
pub(super) fn check_index(
    what: impl FnOnce() -> String,
    value: u64,
    len: usize,
    table: &str,
) -> Result<u32, Invalid> {
    if value < len as u64 {
        Ok(value as u32)
    } else {
        Err(format!(
            "{}: {value} is out of range ({len} {table})",
            what()
        ))
    }
}

/// Values a [`Column`] decodes at a time: 8 KiB per column, read in a tight loop (reading them
/// one by one through the iterator was most of a large session's read time).
const BATCH: usize = 1024;

/// A packed column read in batches, its errors named by `field`: decoded in step with the
/// other columns, so no column is ever held whole as numbers.
pub(super) struct Column<'a> {
    /// The field the column holds, named in its errors.
    pub(super) field: &'static str,
    values: Values<'a>,
    /// Values read so far.
    read: u64,
    /// The current batch of decoded values, and the next one to hand out.
    batch: Vec<u64>,
    at: usize,
    /// The error that ended the column, after the values in `batch`.
    error: Option<PackedError>,
}

impl<'a> Column<'a> {
    pub(super) fn new(field: &'static str, text: &'a str) -> Self {
        Column {
            field,
            values: Values::new(text),
            read: 0,
            batch: Vec::new(),
            at: 0,
            error: None,
        }
    }

    /// The next value of a column that must hold `expected` values.
    #[inline]
    pub(super) fn next(&mut self, expected: u64) -> Result<u64, Invalid> {
        if self.at == self.batch.len() {
            self.refill();
        }
        match self.batch.get(self.at) {
            Some(&value) => {
                self.at += 1;
                self.read += 1;
                Ok(value)
            }
            None => Err(match &self.error {
                Some(e) => format!("{}: {e}", self.field),
                None => format!(
                    "{}: has {} entries, expected {expected}",
                    self.field, self.read
                ),
            }),
        }
    }

    /// The most values the column can hold (a bound for `Vec::with_capacity` that a file
    /// cannot inflate past its own size).
    pub(super) fn max_len(&self) -> usize {
        self.values.max_len()
    }

    /// Decodes the next batch (none after an error).
    #[inline(never)]
    fn refill(&mut self) {
        self.batch.clear();
        self.at = 0;
        if self.error.is_none() {
            if self.batch.capacity() == 0 {
                self.batch.reserve_exact(BATCH);
            }
            if let Err(e) = self.values.fill(&mut self.batch, BATCH) {
                self.error = Some(e);
            }
        }
    }

    /// The next of `count` values as an index into table `table` of `len` entries, row `i`
    /// named in the error.
    pub(super) fn next_index(
        &mut self,
        i: u64,
        count: u64,
        len: usize,
        table: &str,
    ) -> Result<u32, Invalid> {
        let value = self.next(count)?;
        check_index(|| format!("{}[{i}]", self.field), value, len, table)
    }

    /// Checks that the column holds no more than the `expected` values already read.
    pub(super) fn finish(mut self, expected: u64) -> Result<(), Invalid> {
        let mut extra = (self.batch.len() - self.at) as u64;
        if let Some(e) = &self.error {
            return Err(format!("{}: {e}", self.field));
        }
        for value in self.values.by_ref() {
            value.map_err(|e| format!("{}: {e}", self.field))?;
            extra += 1;
        }
        if extra > 0 {
            return Err(format!(
                "{}: has {} entries, expected {expected}",
                self.field,
                self.read + extra
            ));
        }
        Ok(())
    }
}

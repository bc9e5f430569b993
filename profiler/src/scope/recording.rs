//! A session's scope and task events as the collector gathers them from the threads' buffers:
//! spans (a begin and its end) with their parents, marks, task names and poll intervals, and
//! for each thread when its innermost open scope and current task changed, which gives every
//! sample of the thread its scope and task by time.

use super::buffer::{self, EventBuf};
use super::SiteInfo;
use std::collections::HashMap;

/// One scope instance. Times are nanoseconds since the session started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawSpan {
    /// The site's index in [`Recording::sites`].
    pub site: u32,
    pub start_ns: u64,
    /// `None` while open (closed at the session's end by [`Recording::finish`]).
    pub end_ns: Option<u64>,
    /// The span open around it on its thread when it began, by index in the thread's spans.
    pub parent: Option<usize>,
    /// Field values by the site's key index.
    pub fields: Vec<(u16, String)>,
}

/// One instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawMark {
    pub site: u32,
    pub time_ns: u64,
    pub fields: Vec<(u16, String)>,
}

/// One poll of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawPoll {
    pub task: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Where the task waited after this poll (wall mode): return addresses, innermost first.
    pub waited_at: Option<Box<[u64]>>,
}

/// What was recorded on one thread.
#[derive(Debug, Default)]
pub(crate) struct ThreadEvents {
    pub tid: u32,
    /// In order of their begins (a parent before its children).
    pub spans: Vec<RawSpan>,
    pub marks: Vec<RawMark>,
    /// In order of their ends.
    pub polls: Vec<RawPoll>,
    /// When the thread's innermost open span changed, and to what, in time order.
    pub scope_changes: Vec<(u64, Option<usize>)>,
    /// When the thread's current task changed, and to what, in time order.
    pub task_changes: Vec<(u64, Option<u64>)>,
    /// Open spans by sequence number.
    open: HashMap<u64, usize>,
    /// The innermost open span (the thread's slot, mirrored).
    current: Option<usize>,
    /// Polls begun and not ended: task and start, innermost last.
    polling: Vec<(u64, u64)>,
    /// Where a field record goes: the last span (true) or mark (false) begun.
    fields_of: Option<bool>,
    /// The thread's records as drained, decoded at [`Recording::finish`]: copying words is
    /// what the collector can do as fast as a thread writes them.
    raw: Vec<u64>,
}

/// A session's recording.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    /// The monotonic clock at the session's start.
    pub start_ns: u64,
    pub threads: Vec<ThreadEvents>,
    index: HashMap<u32, usize>,
    /// Events dropped because a thread's buffer was full.
    pub dropped: u64,
    /// The call sites, by id minus one (filled at stop).
    pub sites: Vec<SiteInfo>,
    /// Each task's name, by id.
    pub task_names: HashMap<u64, String>,
}

impl Recording {
    /// An empty recording of a session that started at `start_ns` (monotonic).
    pub fn new(start_ns: u64) -> Recording {
        Recording {
            start_ns,
            ..Recording::default()
        }
    }

    /// Moves `buf`'s events in (decoded at [`Recording::finish`]); returns how many words
    /// `buf` held.
    pub fn drain(&mut self, buf: &EventBuf) -> usize {
        self.dropped += buf.take_dropped();
        let i = *self.index.entry(buf.tid).or_insert_with(|| {
            self.threads.push(ThreadEvents {
                tid: buf.tid,
                ..ThreadEvents::default()
            });
            self.threads.len() - 1
        });
        buf.drain_words(&mut self.threads[i].raw)
    }

    /// Decodes the records drained from each thread, up to the session's end `end_ns`.
    fn decode(&mut self, end_ns: u64) {
        let start = self.start_ns;
        for thread in &mut self.threads {
            let raw = std::mem::take(&mut thread.raw);
            let mut pos = 0;
            while pos < raw.len() {
                let len = buffer::parts(raw[pos]).1.clamp(1, buffer::MAX_RECORD);
                let end = (pos + len).min(raw.len());
                let record = (raw[pos], &raw[pos + 1..end]);
                thread.record(record, start, end_ns, &mut self.task_names);
                pos = end;
            }
        }
    }

    /// Closes what is still open at `end_ns` (since the session's start). Writers may outlive
    /// the session's end by a little (until `scope::disable`): what began after it is not
    /// kept, and what ended after it ends at it.
    pub fn finish(&mut self, end_ns: u64) {
        self.decode(end_ns);
        for t in &mut self.threads {
            for s in &mut t.spans {
                if s.end_ns.is_none() {
                    s.end_ns = Some(end_ns.max(s.start_ns));
                }
            }
            t.open.clear();
            while let Some((task, start)) = t.polling.pop() {
                t.polls.push(RawPoll {
                    task,
                    start_ns: start,
                    end_ns: end_ns.max(start),
                    waited_at: None,
                });
            }
        }
    }

    /// The thread `tid`'s events, if it recorded any.
    pub fn thread(&self, tid: u32) -> Option<&ThreadEvents> {
        self.index.get(&tid).map(|&i| &self.threads[i])
    }
}

impl ThreadEvents {
    /// Takes one record, its header and payload; times are made relative to `start` and
    /// records that begin after `end` are left out.
    fn record(
        &mut self,
        (h, p): (u64, &[u64]),
        start: u64,
        end: u64,
        names: &mut HashMap<u64, String>,
    ) {
        let thread = self;
        let (kind, _, index, extra) = buffer::parts(h);
        let at = |w: u64| w.saturating_sub(start).min(end);
        let after_end = |w: u64| w.saturating_sub(start) > end;
        if let (buffer::BEGIN | buffer::MARK | buffer::POLL_BEGIN, &[time, ..]) = (kind, p) {
            if after_end(time) {
                // Its fields follow it: they go nowhere.
                thread.fields_of = None;
                return;
            }
        }
        match (kind, p) {
            (buffer::BEGIN, &[time, seq, parent, ..]) => {
                thread.begin(index.saturating_sub(1), at(time), seq, parent)
            }
            (buffer::END, &[time, seq, ..]) => thread.end(at(time), seq),
            (buffer::MARK, &[time, ..]) => {
                thread.marks.push(RawMark {
                    site: index.saturating_sub(1),
                    time_ns: at(time),
                    fields: Vec::new(),
                });
                thread.fields_of = Some(false);
            }
            (buffer::FIELD, words) => {
                let field = (index as u16, buffer::unpack(words, usize::from(extra)));
                match thread.fields_of {
                    Some(true) => {
                        if let Some(s) = thread.spans.last_mut() {
                            s.fields.push(field)
                        }
                    }
                    Some(false) => {
                        if let Some(m) = thread.marks.last_mut() {
                            m.fields.push(field)
                        }
                    }
                    None => {}
                }
            }
            (buffer::POLL_BEGIN, &[time, task, ..]) => {
                thread.polling.push((task, at(time)));
                thread.task_changes.push((at(time), Some(task)));
            }
            (buffer::POLL_END, &[time, task, ..]) => thread.poll_end(at(time), task),
            (buffer::AWAIT, [task, addrs @ ..]) => {
                // The poll it follows is the last one of its task to end on the thread; one
                // whose end was not recorded writes no await.
                if let Some(p) = thread.polls.last_mut().filter(|p| p.task == *task) {
                    p.waited_at = Some(addrs.into());
                }
            }
            (buffer::TASK_NAME, [task, words @ ..]) => {
                names
                    .entry(*task)
                    .or_insert_with(|| buffer::unpack(words, usize::from(extra)));
            }
            _ => {}
        }
    }

    fn begin(&mut self, site: u32, time: u64, seq: u64, parent: u64) {
        let parent = self.open.get(&parent).copied();
        self.spans.push(RawSpan {
            site,
            start_ns: time,
            end_ns: None,
            parent,
            fields: Vec::new(),
        });
        let i = self.spans.len() - 1;
        self.open.insert(seq, i);
        self.current = Some(i);
        self.scope_changes.push((time, Some(i)));
        self.fields_of = Some(true);
    }

    fn end(&mut self, time: u64, seq: u64) {
        // An end whose begin was dropped (a full buffer, or a previous session's) ends nothing.
        let Some(i) = self.open.remove(&seq) else {
            return;
        };
        self.spans[i].end_ns = Some(time.max(self.spans[i].start_ns));
        // As the thread's slot: only the innermost scope's end gives it back to its parent.
        if self.current == Some(i) {
            let mut up = self.spans[i].parent;
            // An ancestor whose guard dropped first has ended already.
            while let Some(p) = up.filter(|&p| self.spans[p].end_ns.is_some()) {
                up = self.spans[p].parent;
            }
            self.current = up;
            self.scope_changes.push((time, self.current));
        }
    }

    fn poll_end(&mut self, time: u64, task: u64) {
        let Some(k) = self.polling.iter().rposition(|&(t, _)| t == task) else {
            return;
        };
        let (_, start) = self.polling.remove(k);
        self.polls.push(RawPoll {
            task,
            start_ns: start,
            end_ns: time.max(start),
            waited_at: None,
        });
        self.task_changes
            .push((time, self.polling.last().map(|&(t, _)| t)));
    }

    /// The innermost span open at `time_ns` (index in [`ThreadEvents::spans`]).
    pub fn scope_at(&self, time_ns: u64) -> Option<usize> {
        at(&self.scope_changes, time_ns)
    }

    /// The task being polled at `time_ns`.
    pub fn task_at(&self, time_ns: u64) -> Option<u64> {
        at(&self.task_changes, time_ns)
    }
}

/// The value of the last change at or before `time_ns`.
fn at<T: Copy>(changes: &[(u64, Option<T>)], time_ns: u64) -> Option<T> {
    let n = changes.partition_point(|&(t, _)| t <= time_ns);
    n.checked_sub(1).and_then(|i| changes[i].1)
}

#[cfg(test)]
mod tests {
    use super::super::buffer::{header, BEGIN, END, FIELD, MARK, POLL_BEGIN, POLL_END, TASK_NAME};
    use super::*;

    fn recording(records: &[&[u64]]) -> Recording {
        let buf = EventBuf::new(1024, 42);
        for r in records {
            assert!(buf.push(r));
        }
        let mut rec = Recording::new(1000);
        rec.drain(&buf);
        rec
    }

    fn begin(site: u32, t: u64, seq: u64, parent: u64) -> [u64; 4] {
        [header(BEGIN, 4, site, 0), 1000 + t, seq, parent]
    }

    fn end(t: u64, seq: u64) -> [u64; 3] {
        [header(END, 3, 0, 0), 1000 + t, seq]
    }

    #[test]
    fn nested_scopes_have_parents_and_samples_get_the_innermost() {
        let mut rec = recording(&[
            &begin(1, 10, 1, 0),
            &begin(2, 20, 2, 1),
            &end(30, 2),
            &begin(2, 40, 3, 1),
            &end(50, 3),
            &end(60, 1),
        ]);
        rec.finish(100);
        let t = rec.thread(42).unwrap();
        let spans: Vec<_> = t
            .spans
            .iter()
            .map(|s| (s.site, s.start_ns, s.end_ns, s.parent))
            .collect();
        assert_eq!(
            spans,
            vec![
                (0, 10, Some(60), None),
                (1, 20, Some(30), Some(0)),
                (1, 40, Some(50), Some(0))
            ]
        );
        let at: Vec<_> = [5, 15, 25, 35, 45, 55, 65]
            .iter()
            .map(|&s| t.scope_at(s))
            .collect();
        assert_eq!(
            at,
            [None, Some(0), Some(1), Some(0), Some(2), Some(0), None]
        );
    }

    #[test]
    fn guards_dropped_out_of_order_end_their_own_scope() {
        // a opens, b opens inside, a's guard drops first, then b's.
        let mut rec = recording(&[
            &begin(1, 10, 1, 0),
            &begin(2, 20, 2, 1),
            &end(30, 1),
            &end(40, 2),
        ]);
        rec.finish(100);
        let t = rec.thread(42).unwrap();
        assert_eq!(t.spans[0].end_ns, Some(30));
        assert_eq!(t.spans[1].end_ns, Some(40));
        // b was innermost until its end, then nothing (its parent had ended).
        assert_eq!(t.scope_at(35), Some(1));
        assert_eq!(t.scope_at(45), None);
    }

    #[test]
    fn open_scopes_and_polls_close_at_the_end_and_unmatched_ends_are_ignored() {
        let mut rec = recording(&[
            &end(5, 77),
            &begin(1, 10, 1, 0),
            &[header(POLL_BEGIN, 3, 0, 0), 1020, 9],
        ]);
        rec.finish(100);
        let t = rec.thread(42).unwrap();
        assert_eq!(t.spans.len(), 1);
        assert_eq!(t.spans[0].end_ns, Some(100));
        assert_eq!(
            t.polls,
            [RawPoll {
                task: 9,
                start_ns: 20,
                end_ns: 100,
                waited_at: None
            }]
        );
    }

    #[test]
    fn records_written_after_the_sessions_end_are_not_kept() {
        let mut field = [0u64; 2];
        buffer::pack(b"7", &mut field[1..]);
        field[0] = header(FIELD, 2, 0, 1);
        let mut rec = recording(&[
            &begin(1, 10, 1, 0),
            &[header(POLL_BEGIN, 3, 0, 0), 1020, 9],
            // The session ends at 50; a thread that had not seen it yet writes on.
            &[header(POLL_END, 3, 0, 0), 1060, 9],
            &end(70, 1),
            &begin(2, 80, 2, 0),
            &[header(MARK, 2, 3, 1), 1085],
            &field,
            &end(90, 2),
            &[header(POLL_BEGIN, 3, 0, 0), 1095, 4],
        ]);
        rec.finish(50);
        let t = rec.thread(42).unwrap();
        let spans: Vec<_> = t
            .spans
            .iter()
            .map(|s| (s.site, s.start_ns, s.end_ns))
            .collect();
        assert_eq!(spans, [(0, 10, Some(50))]);
        assert!(t.marks.is_empty());
        assert_eq!(
            t.polls,
            [RawPoll {
                task: 9,
                start_ns: 20,
                end_ns: 50,
                waited_at: None
            }]
        );
        assert_eq!(t.scope_at(60), None);
        assert_eq!(t.task_at(60), None);
    }

    #[test]
    fn an_await_goes_to_the_poll_of_its_task_that_just_ended() {
        use super::super::buffer::AWAIT;
        let mut rec = recording(&[
            &[header(POLL_BEGIN, 3, 0, 0), 1010, 5],
            &[header(POLL_END, 3, 0, 0), 1020, 5],
            &[header(AWAIT, 4, 0, 0), 5, 0xa1, 0xa2],
            &[header(POLL_BEGIN, 3, 0, 0), 1030, 5],
            &[header(POLL_END, 3, 0, 0), 1040, 5],
            // Another task's await (its end was refused) goes nowhere.
            &[header(AWAIT, 3, 0, 0), 6, 0xb1],
            &[header(POLL_BEGIN, 3, 0, 0), 1050, 5],
        ]);
        rec.finish(100);
        let waits: Vec<_> = rec
            .thread(42)
            .unwrap()
            .polls
            .iter()
            .map(|p| p.waited_at.as_deref())
            .collect();
        assert_eq!(waits, [Some(&[0xa1, 0xa2][..]), None, None]);
    }

    #[test]
    fn nested_polls_restore_the_outer_task_and_names_and_fields_arrive() {
        let mut name = [0u64; 3];
        let n = buffer::pack(b"fetch-user", &mut name[1..]);
        name[0] = 5;
        let mut task_name = vec![header(TASK_NAME, 2 + n, 0, 10)];
        task_name.extend_from_slice(&name[..1 + n]);
        let mut field = [0u64; 2];
        buffer::pack(b"42", &mut field[1..]);
        field[0] = header(FIELD, 2, 0, 2);
        let mut rec = recording(&[
            &task_name,
            &[header(POLL_BEGIN, 3, 0, 0), 1010, 5],
            &[header(POLL_BEGIN, 3, 0, 0), 1020, 6],
            &[header(MARK, 2, 3, 1), 1025],
            &field,
            &[header(POLL_END, 3, 0, 0), 1030, 6],
            &[header(POLL_END, 3, 0, 0), 1040, 5],
        ]);
        rec.finish(100);
        let t = rec.thread(42).unwrap();
        assert_eq!(rec.task_names[&5], "fetch-user");
        assert_eq!(
            [5, 15, 25, 35, 45].map(|s| t.task_at(s)),
            [None, Some(5), Some(6), Some(5), None]
        );
        assert_eq!(t.marks[0].site, 2);
        assert_eq!(t.marks[0].fields, [(0, "42".to_string())]);
    }
}

//! Turning a parsed [`FileIn`] into a [`Session`], checking every index on the way.
//!
//! Nothing in a file is trusted: each reference into a table is bounds-checked, the stack tree is
//! stored so that a parent always comes before its child (no cycles), and column lengths must agree.
//! A failure names the field and entry, e.g. `samples.stack[17]: stack 900 out of range (45 stacks)`.

use super::column::{check_index, Column, Invalid};
use super::file_format::{FileIn, MappingRow, Previous};
use super::packed::{unzigzag, Values};
use super::scopes_file::{decode_scopes, decode_tasks, Tables};
use super::{
    Frame, FrameId, Mapping, Metadata, ProcessIdx, SampleState, SampleType, Samples, Scopes,
    Session, SpanIdx, StackId, StackNode, StrId, TaskIdx, Tasks, Thread, ThreadIdx,
};

fn string_id(what: impl FnOnce() -> String, value: u32, strings: usize) -> Result<StrId, Invalid> {
    check_index(what, value.into(), strings, "strings").map(StrId)
}

/// Checks that frame `i`'s string ids are in range.
fn check_frame(i: usize, frame: &Frame, strings: usize) -> Result<(), Invalid> {
    let check = |field: &str, v: Option<StrId>| {
        v.map(|v| string_id(|| format!("frames[{i}].{field}"), v.0, strings))
            .transpose()
    };
    check("name", Some(frame.name))?;
    check("file", frame.file)?;
    check("module", frame.module)?;
    Ok(())
}

fn mapping(i: usize, row: &MappingRow, strings: usize) -> Result<Mapping, Invalid> {
    if row.limit <= row.start {
        return Err(format!(
            "mappings[{i}]: limit {:#x} is not above start {:#x}",
            row.limit, row.start
        ));
    }
    Ok(Mapping {
        start: row.start,
        limit: row.limit,
        offset: row.offset,
        path: string_id(|| format!("mappings[{i}].path"), row.path, strings)?,
        build_id: row.build_id.clone(),
    })
}

fn stacks(file: &FileIn<'_>, frames: usize) -> Result<Vec<StackNode>, Invalid> {
    // The parent column sets the number of stacks (a small table next to the samples: it is
    // decoded whole); the frame column is read in step with it.
    let parents = Values::new(&file.stacks.parent)
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| format!("stacks.parent: {e}"))?;
    let expected = parents.len() as u64;
    let mut frame_ids = Column::new("stacks.frame", &file.stacks.frame);
    let mut nodes = Vec::with_capacity(parents.len());
    for (i, &back) in parents.iter().enumerate() {
        let frame = frame_ids.next(expected)?;
        let parent = match back {
            0 => None,
            back if back <= i as u64 => Some(StackId((i as u64 - back) as u32)),
            back => {
                return Err(format!(
                    "stacks.parent[{i}]: offset {back} points before the first stack \
                     (a parent must come before its child)"
                ))
            }
        };
        let frame = check_index(|| format!("stacks.frame[{i}]"), frame, frames, "frames")?;
        nodes.push(StackNode {
            parent,
            frame: FrameId(frame),
        });
    }
    frame_ids.finish(expected)?;
    Ok(nodes)
}

/// The sizes of the tables the samples point into.
struct SampleTables {
    stacks: usize,
    threads: usize,
    spans: usize,
    tasks: usize,
}

/// A row of a sample context column (`samples.scope`, `samples.task`): 0 for none, `n` for
/// index `n - 1` of a table of `len` entries.
fn context(
    column: &mut Column<'_>,
    i: u64,
    count: u64,
    len: usize,
    table: &str,
) -> Result<Option<u32>, Invalid> {
    match column.next(count)? {
        0 => Ok(None),
        n => check_index(|| format!("{}[{i}]", column.field), n - 1, len, table).map(Some),
    }
}

fn samples(file: &FileIn<'_>, sizes: SampleTables) -> Result<Samples, Invalid> {
    let SampleTables {
        stacks,
        threads,
        spans,
        tasks,
    } = sizes;
    let cols = &file.samples;
    let extras = cols.extra_weight_delta.len();
    if extras != file.meta.extra_sample_types.len() {
        return Err(format!(
            "samples.extra_weight_delta: has {extras} columns, but meta.extra_sample_types \
             names {} types",
            file.meta.extra_sample_types.len()
        ));
    }
    let mut extra_columns: Vec<Option<Column<'_>>> = cols
        .extra_weight_delta
        .iter()
        .map(|text| {
            text.as_deref()
                .map(|text| Column::new("samples.extra_weight_delta", text))
        })
        .collect();
    let mut state = cols
        .state
        .as_deref()
        .map(|text| Column::new("samples.state", text));
    let mut previous_extra = vec![0u64; threads * extras];
    let mut extra_totals = vec![0u64; extras];
    let count = cols.count;
    let mut thread = Column::new("samples.thread", &cols.thread);
    let mut stack = Column::new("samples.stack", &cols.stack);
    let mut time = Column::new("samples.time_delta", &cols.time_delta);
    let mut weight = Column::new("samples.weight_delta", &cols.weight_delta);
    let mut multiplicity = cols
        .multiplicity_delta
        .as_deref()
        .map(|text| Column::new("samples.multiplicity_delta", text));
    // `count` comes from the file: reserve no more than the columns can hold.
    let rows = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(stack.max_len());
    let mut previous = vec![Previous::default(); threads];
    let mut out = Samples {
        stack: Vec::with_capacity(rows),
        thread: Vec::with_capacity(rows),
        // Made when the first time other than 0 comes: a session without times (imported
        // from folded stacks or pprof) gets one zeroed allocation at the end, whose pages
        // the system gives only when written (8 MB for a million samples).
        time_ns: Vec::new(),
        weight: Vec::with_capacity(rows),
        multiplicity: Vec::with_capacity(if multiplicity.is_some() { rows } else { 0 }),
        extra_weights: extra_columns
            .iter()
            .map(|c| c.as_ref().map(|_| Vec::with_capacity(rows)))
            .collect(),
        state: Vec::with_capacity(if state.is_some() { rows } else { 0 }),
        scope: Vec::with_capacity(if cols.scope.is_some() { rows } else { 0 }),
        task: Vec::with_capacity(if cols.task.is_some() { rows } else { 0 }),
    };
    let mut scope = cols
        .scope
        .as_deref()
        .map(|text| Column::new("samples.scope", text));
    let mut task = cols
        .task
        .as_deref()
        .map(|text| Column::new("samples.task", text));
    let mut total_count = 0u64;
    let mut total_weight = 0u64;
    let mut timed = false;
    for i in 0..count {
        let t = check_index(
            || format!("samples.thread[{i}]"),
            thread.next(count)?,
            threads,
            "threads",
        )?;
        let prev = &mut previous[t as usize];
        prev.stack = prev.stack.wrapping_add(unzigzag(stack.next(count)?) as u64);
        prev.time = prev.time.wrapping_add(unzigzag(time.next(count)?) as u64);
        prev.weight = prev
            .weight
            .wrapping_add(unzigzag(weight.next(count)?) as u64);
        let s = check_index(
            || format!("samples.stack[{i}]"),
            prev.stack,
            stacks,
            "stacks",
        )?;
        // Every sum of weights the aggregation makes is at most this one, so none can overflow.
        total_weight = total_weight
            .checked_add(prev.weight)
            .ok_or_else(|| format!("samples.weight_delta[{i}]: the total weight passes 2^64"))?;
        out.stack.push(StackId(s));
        out.thread.push(ThreadIdx(t));
        if prev.time != 0 && !timed {
            // The rows before this one had time 0.
            timed = true;
            out.time_ns.reserve_exact(rows.max(out.stack.len()));
            out.time_ns.resize(out.stack.len() - 1, 0);
        }
        if timed {
            out.time_ns.push(prev.time);
        }
        out.weight.push(prev.weight);
        if let Some(multiplicity) = &mut multiplicity {
            prev.multiplicity = prev
                .multiplicity
                .wrapping_add(unzigzag(multiplicity.next(count)?) as u64);
            total_count = total_count.checked_add(prev.multiplicity).ok_or_else(|| {
                format!("samples.multiplicity_delta[{i}]: the number of samples passes 2^64")
            })?;
            out.multiplicity.push(prev.multiplicity);
        }
        for (k, column) in extra_columns.iter_mut().enumerate() {
            let Some(column) = column else { continue };
            let before = &mut previous_extra[t as usize * extras + k];
            *before = before.wrapping_add(unzigzag(column.next(count)?) as u64);
            extra_totals[k] = extra_totals[k].checked_add(*before).ok_or_else(|| {
                format!("samples.extra_weight_delta[{k}][{i}]: the total weight passes 2^64")
            })?;
            if let Some(Some(out)) = out.extra_weights.get_mut(k) {
                out.push(*before);
            }
        }
        if let Some(state) = &mut state {
            out.state.push(match state.next(count)? {
                0 => SampleState::Running,
                1 => SampleState::Waiting,
                other => {
                    return Err(format!(
                        "samples.state[{i}]: {other} is not a state (0 running, 1 waiting)"
                    ))
                }
            });
        }
        if let Some(scope) = &mut scope {
            let s = context(scope, i, count, spans, "spans")?;
            out.scope.push(s.map(SpanIdx));
        }
        if let Some(task) = &mut task {
            let t = context(task, i, count, tasks, "tasks")?;
            out.task.push(t.map(TaskIdx));
        }
    }
    for column in [scope, task].into_iter().flatten() {
        column.finish(count)?;
    }
    thread.finish(count)?;
    stack.finish(count)?;
    time.finish(count)?;
    weight.finish(count)?;
    if let Some(multiplicity) = multiplicity {
        multiplicity.finish(count)?;
    }
    for column in extra_columns.into_iter().flatten() {
        column.finish(count)?;
    }
    if let Some(state) = state {
        state.finish(count)?;
    }
    if !timed {
        out.time_ns = vec![0; out.stack.len()];
    }
    Ok(out)
}

/// What a version 1 file's weights measure, which it did not say: plain sample counts for
/// imported folded stacks, otherwise what its mode records.
fn version_1_sample_type(meta: &Metadata) -> SampleType {
    match meta.timer.as_str() {
        "import:folded" => SampleType::samples(),
        _ => meta.mode.sample_type(),
    }
}

/// The checked session a parsed file describes.
pub(crate) fn decode(mut file: FileIn<'_>) -> Result<Session, Invalid> {
    if file.strings.first() != Some("") {
        return Err("strings[0]: must be the empty string".to_owned());
    }
    let n_strings = file.strings.len();
    for (i, frame) in file.frames.0.iter().enumerate() {
        check_frame(i, &frame, n_strings)?;
    }
    let frames = std::mem::take(&mut file.frames.0);
    let stacks = stacks(&file, frames.len())?;
    // Files before version 4 have no process table: their threads belong to the one process
    // `meta` describes, index 0 of `Session::process_table`.
    let processes = if file.version < 4 {
        Vec::new()
    } else {
        std::mem::take(&mut file.processes)
    };
    let n_processes = processes.len().max(1);
    let threads = file
        .threads
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let process = if file.version < 4 { 0 } else { row.process };
            Ok(Thread {
                tid: row.tid,
                name: string_id(|| format!("threads[{i}].name"), row.name, n_strings)?,
                process: ProcessIdx(check_index(
                    || format!("threads[{i}].process"),
                    process.into(),
                    n_processes,
                    "processes",
                )?),
            })
        })
        .collect::<Result<Vec<_>, Invalid>>()?;
    let mappings = file
        .mappings
        .iter()
        .enumerate()
        .map(|(i, row)| mapping(i, row, n_strings))
        .collect::<Result<Vec<_>, _>>()?;
    let tables = Tables {
        strings: n_strings,
        threads: threads.len(),
        stacks: stacks.len(),
    };
    let scopes = match &file.scopes {
        Some(scopes) => decode_scopes(scopes, tables)?,
        None => Scopes::default(),
    };
    let tasks = match &file.tasks {
        Some(tasks) => decode_tasks(tasks, tables)?,
        None => Tasks::default(),
    };
    let samples = samples(
        &file,
        SampleTables {
            stacks: stacks.len(),
            threads: threads.len(),
            spans: scopes.spans.len(),
            tasks: tasks.tasks.len(),
        },
    )?;
    let mut meta = file.meta;
    if file.version < 2 {
        meta.sample_type = version_1_sample_type(&meta);
    }
    // A type is chosen by its name (`--type`, the viewer's selector) and the schema requires
    // one: a session read with an empty name could not be written back valid.
    if meta.sample_type.name.is_empty() {
        return Err("meta.sample_type.name: empty (a sample type needs a name)".to_owned());
    }
    if let Some(i) = meta
        .extra_sample_types
        .iter()
        .position(|t| t.name.is_empty())
    {
        return Err(format!(
            "meta.extra_sample_types[{i}].name: empty (a sample type needs a name)"
        ));
    }
    Ok(Session {
        meta,
        strings: file.strings,
        frames,
        stacks,
        threads,
        processes,
        mappings,
        samples,
        scopes,
        tasks,
        counted: std::mem::take(&mut file.calls),
    })
}

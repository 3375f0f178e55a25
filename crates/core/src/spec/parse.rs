//! KDL text -> KDL documents, several files, and pieces of large files, at once.
//!
//! kdl's parser reads about a megabyte a second, so a 100,000-GPU configuration spends
//! much of its validation here. Files are parsed concurrently on a few threads (as many
//! as the machine has cores), and a large file is cut where a top-level node ends
//! ([`top_level_ends`]) into pieces parsed concurrently too. A piece is parsed behind
//! as many spaces as the text before it, so its spans are those of the whole file, and
//! the pieces' nodes are joined in order: what `decode` reads (nodes, names, entries,
//! values, spans) is then that of one parse of the whole file. A piece that does not
//! parse on its own (a syntax error, or a cut the rough scan got wrong) sends its file
//! back to be parsed whole, so syntax errors, and the parser's recovery from them, are
//! exactly those of one parse.

use super::nesting::top_level_ends;
use kdl::{KdlDocument, KdlError};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What parsing one text gives.
pub(super) type Parsed = Result<KdlDocument, KdlError>;

/// Stack for the KDL parser: it recurses once per error it recovers from (kdl 6.7,
/// `v2_parser::document`), so a file of thousands of broken lines needs a deep stack.
const PARSER_STACK: usize = 512 * 1024 * 1024;

/// Files smaller than this are parsed in one piece; larger ones in up to one piece per
/// core, each at least about this large.
const MIN_PIECE: usize = 64 * 1024;

/// A byte range of one of the texts, ending where a top-level node ends.
#[derive(Clone, Copy, Debug)]
struct Piece {
    text: usize,
    start: usize,
    end: usize,
}

/// Parses each of `texts` as a KDL v2 document, concurrently.
pub(super) fn parse_texts(texts: &[&str]) -> Vec<Parsed> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_texts_in(texts, cores, MIN_PIECE)
}

/// [`parse_texts`] with `cores` threads and pieces of at least `min_piece` bytes.
fn parse_texts_in(texts: &[&str], cores: usize, min_piece: usize) -> Vec<Parsed> {
    let pieces: Vec<Piece> = texts
        .iter()
        .enumerate()
        .flat_map(|(t, text)| cut(t, text, cores, min_piece))
        .collect();
    let parsed = on_parser_threads(
        pieces.len(),
        cores,
        |i| pieces[i].end - pieces[i].start,
        |i| parse_piece(texts, pieces[i]),
    );
    let mut per_text: Vec<Vec<Parsed>> = texts.iter().map(|_| Vec::new()).collect();
    for (piece, result) in pieces.iter().zip(parsed) {
        per_text[piece.text].push(result);
    }
    let mut out: Vec<Option<Parsed>> = per_text.into_iter().map(join).collect();
    let again: Vec<usize> = (0..texts.len()).filter(|&t| out[t].is_none()).collect();
    let whole = on_parser_threads(
        again.len(),
        cores,
        |i| texts[again[i]].len(),
        |i| KdlDocument::parse_v2(texts[again[i]]),
    );
    for (t, result) in again.into_iter().zip(whole) {
        out[t] = Some(result);
    }
    out.into_iter()
        .map(|p| p.expect("every text parsed"))
        .collect()
}

/// Cuts text `t` into pieces: one unless it is larger than `min_piece`, then about
/// equal ones, as many as `cores`, each ending where a top-level node ends.
fn cut(t: usize, text: &str, cores: usize, min_piece: usize) -> Vec<Piece> {
    let wanted = cores.min(text.len() / min_piece.max(1)).max(1);
    let mut cuts = Vec::new();
    if wanted > 1 {
        let ends = top_level_ends(text);
        for k in 1..wanted {
            let target = text.len() * k / wanted;
            let after = cuts.last().copied().unwrap_or(0);
            if let Some(&e) = ends.iter().find(|&&e| e >= target && e > after) {
                cuts.push(e);
            }
        }
    }
    let mut start = 0;
    let mut pieces = Vec::new();
    for end in cuts.into_iter().chain([text.len()]) {
        pieces.push(Piece {
            text: t,
            start,
            end,
        });
        start = end;
    }
    pieces
}

/// Parses one piece, behind as many spaces as there are bytes before it.
fn parse_piece(texts: &[&str], p: Piece) -> Parsed {
    let text = &texts[p.text][p.start..p.end];
    if p.start == 0 {
        return KdlDocument::parse_v2(text);
    }
    let mut padded = String::with_capacity(p.end);
    padded.extend(std::iter::repeat_n(' ', p.start));
    padded.push_str(text);
    KdlDocument::parse_v2(&padded)
}

/// The pieces of one text joined into one document; `None` when a piece did not
/// parse (the text is then parsed whole).
fn join(pieces: Vec<Parsed>) -> Option<Parsed> {
    if pieces.len() == 1 {
        return pieces.into_iter().next();
    }
    let mut docs = pieces.into_iter().collect::<Result<Vec<_>, _>>().ok()?;
    let mut doc = docs.remove(0);
    for mut rest in docs {
        doc.nodes_mut().append(rest.nodes_mut());
    }
    Some(Ok(doc))
}

/// Runs `job(0..jobs)` on up to `cores` threads with the parser's deep stack, largest
/// `size` first (so that the last jobs to finish are small ones), and returns the
/// results in order. A job whose thread could not start or panicked is run here.
fn on_parser_threads<T: Send>(
    jobs: usize,
    cores: usize,
    size: impl Fn(usize) -> usize,
    job: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut order: Vec<usize> = (0..jobs).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(i)));
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut done = Vec::new();
        loop {
            let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return done;
            };
            done.push((i, job(i)));
        }
    };
    let mut out: Vec<Option<T>> = (0..jobs).map(|_| None).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..cores.min(jobs))
            .filter_map(|_| {
                std::thread::Builder::new()
                    .stack_size(PARSER_STACK)
                    .spawn_scoped(s, worker)
                    .ok()
            })
            .collect();
        for (i, result) in handles.into_iter().filter_map(|h| h.join().ok()).flatten() {
            out[i] = Some(result);
        }
    });
    out.into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| job(i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kdl::{KdlEntry, KdlNode};

    /// What decoding reads of a node: type, name, entries and children, with spans.
    fn outline(n: &KdlNode, out: &mut Vec<String>) {
        let entry = |e: &KdlEntry| {
            format!(
                "{:?}={:?}@{:?}",
                e.name().map(|k| (k.value().to_string(), k.span())),
                e.value(),
                e.span()
            )
        };
        out.push(format!(
            "{:?} {}@{:?} {:?} [{}]",
            n.ty().map(|t| (t.value().to_string(), t.span())),
            n.name().value(),
            (n.span(), n.name().span()),
            n.children().map(|c| c.span()),
            n.entries().iter().map(entry).collect::<Vec<_>>().join(", ")
        ));
        for c in n.children().map(|d| d.nodes()).unwrap_or_default() {
            outline(c, out);
        }
    }

    fn outlines(p: &Parsed) -> Vec<String> {
        let mut out = Vec::new();
        for n in p.as_ref().expect("parses").nodes() {
            outline(n, &mut out);
        }
        out
    }

    #[test]
    fn pieces_read_as_the_whole() {
        let one = "// header\ncluster \"c\" {\n    slurm version=\"23.11\"\n}\n";
        let node = |i: usize| {
            format!(
                "training \"t{i}\" team=\"a\" {{\n    gang gpus={i} gpus-per-node=8\n    /- models \"x\"\n}}\n"
            )
        };
        // Every other node after a comment: a node there does not start a piece.
        let sep = |i: usize| if i % 2 == 0 { "" } else { "\n// between\n" };
        let text: String = std::iter::once(one.to_string())
            .chain((0..40).map(|i| format!("{}{}", sep(i), node(i))))
            .collect();
        let whole = KdlDocument::parse_v2(&text);
        for cores in [2, 3, 7] {
            assert!(cut(0, &text, cores, 64).len() > 1);
            let pieces = parse_texts_in(&[&text], cores, 64);
            assert_eq!(outlines(&pieces[0]), outlines(&whole), "{cores} pieces");
        }
    }

    #[test]
    fn example_files_read_as_the_whole() {
        let paths: Vec<_> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"))
                .expect("examples")
                .flat_map(|d| std::fs::read_dir(d.expect("entry").path()).expect("example"))
                .map(|f| f.expect("file").path())
                .collect();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("readable");
            let whole = KdlDocument::parse_v2(&text);
            let pieces = parse_texts_in(&[&text], 4, 256);
            assert_eq!(outlines(&pieces[0]), outlines(&whole), "{}", path.display());
        }
    }

    #[test]
    fn a_broken_piece_gives_the_errors_of_the_whole() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!("training \"t{i}\" {{\n    gang gpus={i}\n}}\n"));
        }
        text.push_str("pool \"p\" mode=\"whole\n}\n");
        let whole = KdlDocument::parse_v2(&text).expect_err("broken");
        let pieces = parse_texts_in(&[&text, "a 1\n"], 3, 32);
        let err = pieces[0].as_ref().expect_err("broken");
        assert_eq!(format!("{err:?}"), format!("{whole:?}"));
        assert!(pieces[1].is_ok());
    }
}

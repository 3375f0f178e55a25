//! `gpuplan report html`: one self-contained page per example (golden snapshots), every
//! inline SVG well-formed XML, byte-identical whatever the order of the input files and
//! the same from a saved plan, the MIG change diagram against an applied state, and a
//! real browser: headless Chromium opens each page, takes a screenshot that must not be
//! blank and logs no JavaScript error (skipped with a message where Chromium is absent;
//! `.ci/run` installs Debian's `chromium`). `GPUPLAN_UPDATE=1` also refreshes the
//! screenshots kept under docs/screenshots/ for the README.

use crate::common;

use crate::common::Scratch;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The page for `args` (paths and flags), written into `s`.
fn report(s: &Scratch, name: &str, args: &[&str]) -> String {
    let out = s.path(name);
    let mut all = vec!["--quiet", "report", "html"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let o = common::gpuplan(&all);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

/// Every `<svg>...</svg>` of a page parses as XML.
fn svgs_are_well_formed(name: &str, html: &str) -> usize {
    let mut n = 0;
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let end = rest[i..].find("</svg>").expect("closed svg") + i + "</svg>".len();
        let svg = &rest[i..end];
        roxmltree::Document::parse(svg)
            .unwrap_or_else(|e| panic!("{name}: SVG {n} is not well-formed: {e}\n{svg}"));
        n += 1;
        rest = &rest[end..];
    }
    n
}

#[test]
fn every_example_has_a_page_with_well_formed_svg_and_a_snapshot() {
    let s = Scratch::new("html-examples");
    for e in examples() {
        let html = report(&s, &format!("{e}.html"), &[&format!("examples/{e}")]);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(
            !html.contains("http://") || !html.contains("src=\"http"),
            "{e}: no network"
        );
        assert!(
            !html.contains("<link") && !html.contains("src=\""),
            "{e}: self-contained"
        );
        for section in [
            "id=\"solver\"",
            "<h2>Fabric</h2>",
            "<h2>Headroom</h2>",
            "Plan: ",
        ] {
            assert!(html.contains(section), "{e}: {section}");
        }
        let n = svgs_are_well_formed(&e, &html);
        assert!(n >= 2, "{e}: {n} SVGs");
        insta::assert_snapshot!(format!("html_{e}"), html);
    }
}

#[test]
fn the_page_does_not_depend_on_file_order_and_a_saved_plan_gives_the_same() {
    let s = Scratch::new("html-order");
    for e in ["mixed-inference", "mixed-authority", "blackwell-ultra"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples").join(e))
            .unwrap()
            .map(|x| x.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
            .collect();
        files.sort();
        let fwd: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
        let mut rev = fwd.clone();
        rev.reverse();
        let a = report(&s, "a.html", &fwd);
        let b = report(&s, "b.html", &rev);
        assert!(a == b, "{e}: the page depends on the order of the files");
        let plan = s.path("plan.json");
        let mut args = vec!["--quiet", "plan"];
        args.extend(fwd.iter().copied());
        args.extend_from_slice(&["-o", plan.to_str().unwrap()]);
        assert!(common::gpuplan(&args).status.success());
        // Its inputs are absolute paths: a saved plan does not choose what is read
        // (GP935, issue 28), so they are passed after it.
        let mut saved = vec![plan.to_str().unwrap()];
        saved.extend(fwd.iter().copied());
        let c = report(&s, "c.html", &saved);
        assert!(a == c, "{e}: the saved plan's page differs");
    }
}

/// Against an applied state with other MIG layouts, the page draws the changed GPUs:
/// kept, destroyed and created instances.
#[test]
fn mig_changes_against_the_state_are_drawn() {
    let s = Scratch::new("html-mig-changes");
    s.copy_in("tests/fixtures/fixed-layout/cluster.kdl", "cluster.kdl");
    let (code, _, err) = s.run(&["apply", "cluster.kdl", "--out-dir", "out", "--auto-approve"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(s.path("cluster.kdl")).unwrap();
    let changed = text.replace(
        "layout \"1g.10gb\" \"1g.10gb\" \"2g.20gb\" \"3g.40gb\"",
        "layout \"1g.10gb\" \"1g.10gb\" \"2g.20gb\" \"1g.10gb\" \"1g.10gb\" \"1g.10gb\"",
    );
    assert_ne!(text, changed);
    std::fs::write(s.path("cluster.kdl"), changed).unwrap();
    let out = s.path("page.html");
    let (code, _, err) = s.run(&["report", "html", "cluster.kdl", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(out).unwrap();
    assert!(html.contains("<h3>Changes (8 GPUs)"), "{html}");
    for how in ["(kept)", "(destroyed)", "(created)"] {
        assert!(html.contains(how), "{how} missing");
    }
    svgs_are_well_formed("mig-changes", &html);
}

#[test]
fn a_stale_saved_plan_is_refused() {
    let s = Scratch::new("html-stale");
    s.copy_in("tests/fixtures/fixed-layout/cluster.kdl", "cluster.kdl");
    let (code, _, err) = s.run(&["plan", "cluster.kdl", "-o", "plan.json", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(s.path("cluster.kdl")).unwrap();
    std::fs::write(s.path("cluster.kdl"), format!("{text}\n// edited\n")).unwrap();
    let (code, _, err) = s.run(&["report", "html", "plan.json", "-o", "page.html"]);
    assert_eq!(code, 1);
    assert!(err.contains("GP922"), "{err}");
    assert!(!s.path("page.html").exists());
}

/// Chromium's screenshot of a page: present, not blank (more than one colour, and
/// a fair share of non-white pixels), and no JavaScript error in the console log.
fn browse(chromium: &Path, page: &Path, png: &Path) -> Result<(), String> {
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1600",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .map_err(|e| e.to_string())?;
    let log = String::from_utf8_lossy(&out.stderr);
    if let Some(l) = log
        .lines()
        .find(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
    {
        return Err(format!("console: {l}"));
    }
    let file = std::fs::File::open(png).map_err(|e| format!("no screenshot: {e}"))?;
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = bytes.chunks(px).collect();
    let first = pixels[0];
    let differ = pixels.iter().filter(|p| *p != &first).count();
    let inked = pixels
        .iter()
        .filter(|p| p.iter().take(3).any(|c| *c < 200))
        .count();
    if differ == 0 || inked * 200 < pixels.len() {
        return Err(format!(
            "blank screenshot: {differ} pixels differ from the first, {inked} of {} inked",
            pixels.len()
        ));
    }
    Ok(())
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

#[test]
fn every_page_renders_in_a_real_browser() {
    let Some(browser) = chromium() else {
        common::missing("Chromium is not installed (.ci/run installs Debian's chromium)");
        return;
    };
    let s = Scratch::new("html-browser");
    let update = std::env::var_os("GPUPLAN_UPDATE").is_some();
    for e in examples() {
        report(&s, &format!("{e}.html"), &[&format!("examples/{e}")]);
        let png = s.path(&format!("{e}.png"));
        browse(&browser, &s.path(&format!("{e}.html")), &png)
            .unwrap_or_else(|why| panic!("{e}: {why}"));
        if update {
            let dir = root().join("docs/screenshots");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(&png, dir.join(format!("report-{e}.png"))).unwrap();
        }
    }
    // The check can fail: a page with a script error is caught.
    let bad = s.path("bad.html");
    std::fs::write(
        &bad,
        "<html><body>x<script>undefinedFn();</script></body></html>",
    )
    .unwrap();
    assert!(browse(&browser, &bad, &s.path("bad.png")).is_err());
}

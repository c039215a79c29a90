//! `scores.svg`: the validation score of every history record (seed, then one per round),
//! accepted records as filled green dots, rejected ones as hollow grey dots, each with its
//! interval as a whisker when the run measured one, and the best score so far as a step
//! line. Hand-written SVG with fixed number formatting, so the same
//! history always gives the same bytes.

use std::fmt::Write;

use crate::optimizer::OptimizationResult;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 48.0;

/// XML-escapes text for an SVG text node or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart of a result's history.
pub fn score_chart(result: &OptimizationResult) -> String {
    let records = &result.history;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let last = records.len().saturating_sub(1).max(1) as f64;
    let x = |i: usize| LEFT + plot_w * i as f64 / last;
    let y = |score: f64| TOP + plot_h * (1.0 - score.clamp(0.0, 1.0));
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{HEIGHT:.0}\" viewBox=\"0 0 {WIDTH:.0} {HEIGHT:.0}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        svg,
        "<title>Validation score per round: {} with {}</title>",
        escape(&result.best_skill.name),
        escape(&result.optimizer)
    );
    let _ = writeln!(
        svg,
        "<rect width=\"{WIDTH:.0}\" height=\"{HEIGHT:.0}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        svg,
        "<text x=\"{LEFT:.0}\" y=\"24\" font-size=\"14\" font-weight=\"bold\">Validation score per round — {}</text>",
        escape(&result.best_skill.name)
    );
    for tick in 0..=4 {
        let score = f64::from(tick) / 4.0;
        let ty = y(score);
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT:.1}\" y1=\"{ty:.1}\" x2=\"{:.1}\" y2=\"{ty:.1}\" stroke=\"#e5e5e5\"/>",
            WIDTH - RIGHT
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555555\">{score:.2}</text>",
            LEFT - 8.0,
            ty + 4.0
        );
    }
    for (i, record) in records.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555555\">{}</text>",
            x(i),
            HEIGHT - BOTTOM + 18.0,
            record.iteration
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555555\">round</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0
    );
    // The best score so far as a step line: it holds the previous best until the next
    // record, then climbs when that record was accepted.
    let mut best_line = Vec::new();
    let mut previous: Option<f64> = None;
    for (i, record) in records.iter().enumerate() {
        let current = if record.accepted {
            Some(record.val_score)
        } else {
            previous
        };
        if let Some(p) = previous {
            best_line.push(format!("{:.1},{:.1}", x(i), y(p)));
        }
        if let Some(c) = current.filter(|c| Some(*c) != previous) {
            best_line.push(format!("{:.1},{:.1}", x(i), y(c)));
        }
        previous = current;
    }
    if best_line.len() > 1 {
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#2e7d32\" stroke-width=\"2\"/>",
            best_line.join(" ")
        );
    }
    // Each score's interval, when the run measured one: a whisker under its dot.
    for (i, record) in records.iter().enumerate() {
        let Some([low, high]) = record.interval else {
            continue;
        };
        let (cx, top, bottom) = (x(i), y(high), y(low));
        let _ = writeln!(
            svg,
            "<path d=\"M{:.1},{top:.1}H{:.1}M{cx:.1},{top:.1}V{bottom:.1}M{:.1},{bottom:.1}H{:.1}\" stroke=\"#9e9e9e\" stroke-width=\"1.5\" fill=\"none\"><title>round {}: interval {low:.3} to {high:.3}</title></path>",
            cx - 4.0,
            cx + 4.0,
            cx - 4.0,
            cx + 4.0,
            record.iteration
        );
    }
    for (i, record) in records.iter().enumerate() {
        let (fill, stroke) = if record.accepted {
            ("#2e7d32", "#2e7d32")
        } else {
            ("#ffffff", "#9e9e9e")
        };
        let _ = writeln!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"2\"><title>round {}: val {:.3} ({})</title></circle>",
            x(i),
            y(record.val_score),
            record.iteration,
            record.val_score,
            if record.accepted {
                "accepted"
            } else {
                "rejected"
            }
        );
    }
    let legend_y = TOP - 8.0;
    let _ = writeln!(
        svg,
        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#2e7d32\"/><text x=\"{:.1}\" y=\"{:.1}\">accepted</text>",
        WIDTH - 170.0,
        legend_y - 4.0,
        WIDTH - 160.0,
        legend_y
    );
    let _ = writeln!(
        svg,
        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#ffffff\" stroke=\"#9e9e9e\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">rejected</text>",
        WIDTH - 90.0,
        legend_y - 4.0,
        WIDTH - 80.0,
        legend_y
    );
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::CandidateRecord;
    use serde_json::Map;
    use skill_factory_core::Skill;

    fn result() -> OptimizationResult {
        let skill = Skill::new("a<b", "d", "x");
        let record = |iteration, val, accepted| CandidateRecord {
            iteration,
            skill: skill.clone(),
            train_score: 0.0,
            val_score: val,
            accepted,
            candidate: Some(iteration),
            note: String::new(),
            interval: None,
            comparison: None,
        };
        OptimizationResult {
            optimizer: "llm_loop".into(),
            best_skill: skill.clone(),
            baseline_score: 0.25,
            best_score: 0.75,
            best_candidate: 0,
            history: vec![
                record(0, 0.25, true),
                record(1, 0.75, true),
                record(2, 0.5, false),
            ],
            metadata: Map::new(),
            stop: None,
        }
    }

    #[test]
    fn the_chart_marks_accepted_and_rejected_records_and_is_deterministic() {
        let svg = score_chart(&result());
        assert_eq!(svg, score_chart(&result()));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("(accepted)</title>").count(), 2);
        assert_eq!(svg.matches("(rejected)</title>").count(), 1);
        assert!(svg.contains("a&lt;b"));
        // The best line: seed at 0.25, step up to 0.75 at round 1, held at round 2.
        assert!(
            svg.contains("<polyline points=\"56.0,214.0 336.0,214.0 336.0,98.0 616.0,98.0\""),
            "{svg}"
        );
    }

    #[test]
    fn a_measured_interval_is_drawn_as_a_whisker() {
        let mut with = result();
        assert!(!score_chart(&with).contains("interval"));
        with.history[1].interval = Some([0.5, 1.0]);
        let svg = score_chart(&with);
        // Round 1 sits at x 336; 1.0 and 0.5 at y 40 and 156.
        assert!(
            svg.contains("<path d=\"M332.0,40.0H340.0M336.0,40.0V156.0M332.0,156.0H340.0\""),
            "{svg}"
        );
        assert!(svg.contains("<title>round 1: interval 0.500 to 1.000</title>"));
    }
}

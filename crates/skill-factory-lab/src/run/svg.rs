//! `splits.svg`: the before and after of a probe set on every split, as two bar panels
//! (positives detected, negatives flagged) that a report links to.
//!
//! The layout is fixed and small, so the SVG is written by hand: a standalone file (its own
//! namespace, no fonts, scripts or images fetched from anywhere) that renders the same in a
//! browser, a Markdown viewer or an image converter.

use crate::measure::metrics::pct;

/// One split of the figure: its label and its (recall, false-positive rate) before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct SvgRow {
    /// The split's label (`training`, `validation`, ...).
    pub label: String,
    /// (recall, false-positive rate) of the baseline, when there is one.
    pub before: Option<(f64, f64)>,
    /// (recall, false-positive rate) of the probe set reported.
    pub after: (f64, f64),
}

const LABEL_WIDTH: f64 = 100.0;
const PANEL_WIDTH: f64 = 240.0;
/// Room right of a panel for the value label of a full-length bar.
const VALUE_WIDTH: f64 = 60.0;
const PANEL_GAP: f64 = 20.0;
const WIDTH: f64 = LABEL_WIDTH + 2.0 * (PANEL_WIDTH + VALUE_WIDTH) + PANEL_GAP;
const TOP: f64 = 64.0;
const ROW_HEIGHT: f64 = 44.0;
const BAR_HEIGHT: f64 = 14.0;
const FOOTER: f64 = 56.0;
const BEFORE_COLOR: &str = "#9e9e9e";
const AFTER_COLOR: &str = "#1f77b4";
const FONT: &str = "font-family=\"Helvetica, Arial, sans-serif\"";

/// The figure titled `title`, one row per entry of `rows` in their order: "Positives
/// detected" on a 0-100% axis, "Negatives flagged" on an axis scaled to the larger of 1% and
/// 1.25 × the highest false-positive rate shown (a 0.5% rate stays visible), grey bars for
/// before and blue bars for after, each with its one-decimal percentage. Without rows it is
/// an empty 10 × 10 SVG, so the report's image link still resolves to a valid file.
pub fn splits_svg(title: &str, rows: &[SvgRow]) -> String {
    if rows.is_empty() {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\" \
                viewBox=\"0 0 10 10\"></svg>\n"
            .to_string();
    }
    let max_fpr = rows
        .iter()
        .flat_map(|row| row.before.iter().chain(std::iter::once(&row.after)))
        .map(|&(_, fpr)| fpr)
        .fold(0.0, f64::max);
    let panels = [
        ("Positives detected", 1.0, LABEL_WIDTH),
        (
            "Negatives flagged",
            (1.25 * max_fpr).max(0.01),
            LABEL_WIDTH + PANEL_WIDTH + VALUE_WIDTH + PANEL_GAP,
        ),
    ];
    let bottom = TOP + ROW_HEIGHT * rows.len() as f64;
    let height = bottom + FOOTER;

    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH:.0} {height:.0}\" role=\"img\" aria-label=\"{title}\">\n\
         <title>{title}</title>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
         <text x=\"12\" y=\"26\" {FONT} font-size=\"16\" font-weight=\"bold\" fill=\"#222222\">{title}</text>\n",
        title = escape(title),
    );
    for (i, &(heading, scale, x0)) in panels.iter().enumerate() {
        svg.push_str(&format!(
            "<text x=\"{x0:.1}\" y=\"52\" {FONT} font-size=\"13\" font-weight=\"bold\" fill=\"#222222\">{heading}</text>\n\
             <line x1=\"{x0:.1}\" y1=\"{TOP:.1}\" x2=\"{x0:.1}\" y2=\"{bottom:.1}\" stroke=\"#444444\" stroke-width=\"1\"/>\n\
             <line x1=\"{x0:.1}\" y1=\"{bottom:.1}\" x2=\"{x1:.1}\" y2=\"{bottom:.1}\" stroke=\"#444444\" stroke-width=\"1\"/>\n\
             <text x=\"{x0:.1}\" y=\"{ticks:.1}\" {FONT} font-size=\"11\" fill=\"#444444\">0%</text>\n\
             <text x=\"{x1:.1}\" y=\"{ticks:.1}\" {FONT} font-size=\"11\" fill=\"#444444\" text-anchor=\"end\">{top}</text>\n",
            x1 = x0 + PANEL_WIDTH,
            ticks = bottom + 16.0,
            top = pct(scale),
        ));
        for (r, row) in rows.iter().enumerate() {
            let y = TOP + ROW_HEIGHT * r as f64;
            let pick = |(recall, fpr): (f64, f64)| if i == 0 { recall } else { fpr };
            if let Some(before) = row.before {
                svg.push_str(&bar(x0, y + 6.0, pick(before), scale, BEFORE_COLOR));
            }
            svg.push_str(&bar(x0, y + 22.0, pick(row.after), scale, AFTER_COLOR));
        }
    }
    for (r, row) in rows.iter().enumerate() {
        let y = TOP + ROW_HEIGHT * r as f64 + 26.0;
        svg.push_str(&format!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" {FONT} font-size=\"12\" fill=\"#222222\" text-anchor=\"end\">{label}</text>\n",
            x = LABEL_WIDTH - 8.0,
            label = escape(&row.label),
        ));
    }
    let legend_y = bottom + 36.0;
    let mut legend_x = LABEL_WIDTH;
    // A "before" key over a figure without grey bars would promise a comparison it lacks.
    let keys: &[(&str, &str)] = if rows.iter().any(|row| row.before.is_some()) {
        &[("before", BEFORE_COLOR), ("after", AFTER_COLOR)]
    } else {
        &[("after", AFTER_COLOR)]
    };
    for (name, color) in keys {
        svg.push_str(&format!(
            "<rect x=\"{legend_x:.1}\" y=\"{y:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/>\n\
             <text x=\"{tx:.1}\" y=\"{ty:.1}\" {FONT} font-size=\"12\" fill=\"#222222\">{name}</text>\n",
            y = legend_y - 10.0,
            tx = legend_x + 16.0,
            ty = legend_y,
        ));
        legend_x += 80.0;
    }
    svg.push_str("</svg>\n");
    svg
}

/// One bar of `value` on an axis from 0 to `scale`, starting at `x0`, with its value label.
fn bar(x0: f64, y: f64, value: f64, scale: f64, color: &str) -> String {
    // Clamped so a value past the axis (or NaN) cannot draw outside its panel.
    let width = (value / scale * PANEL_WIDTH).clamp(0.0, PANEL_WIDTH);
    format!(
        "<rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{BAR_HEIGHT:.1}\" fill=\"{color}\"/>\n\
         <text x=\"{tx:.1}\" y=\"{ty:.1}\" {FONT} font-size=\"11\" fill=\"#222222\">{value}</text>\n",
        tx = x0 + width + 4.0,
        ty = y + BAR_HEIGHT - 3.0,
        value = pct(value),
    )
}

/// `text` safe inside SVG text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, before: Option<(f64, f64)>, after: (f64, f64)) -> SvgRow {
        SvgRow {
            label: label.to_string(),
            before,
            after,
        }
    }

    #[test]
    fn empty_svg_is_still_an_svg() {
        let svg = splits_svg("nothing", &[]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("width=\"10\" height=\"10\""));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn svg_names_the_splits() {
        let rows = [
            row("training", Some((0.0, 0.0)), (1.0, 0.0)),
            row("validation", Some((0.2, 0.1)), (0.8, 0.0)),
        ];
        let svg = splits_svg("seed -> best", &rows);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        for text in [
            ">training<",
            ">validation<",
            "Positives detected",
            "Negatives flagged",
            ">80.0%<",
            ">10.0%<",
            "seed -&gt; best",
        ] {
            assert!(svg.contains(text), "{text} missing from {svg}");
        }
        // 1.25 × the highest rate shown (10%) ends the false-positive axis.
        assert!(svg.contains(">12.5%</text>"));
        assert_eq!(svg.matches(BEFORE_COLOR).count(), 4 + 1);
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(!svg.contains("href"));
    }

    #[test]
    fn svg_axis_for_false_positives_is_at_least_one_percent() {
        let svg = splits_svg("t", &[row("validation", None, (0.5, 0.0))]);
        assert!(svg.contains(">1.0%</text>"));
        // No baseline: no grey bar and no "before" key.
        assert!(!svg.contains(BEFORE_COLOR));
        assert!(!svg.contains(">before<"));
    }

    #[test]
    fn svg_escapes_its_text() {
        let svg = splits_svg("a & b <\"c\">", &[row("it's <x>", None, (0.5, 0.0))]);
        assert!(svg.contains("a &amp; b &lt;&quot;c&quot;&gt;"));
        assert!(svg.contains("it&#39;s &lt;x&gt;"));
        assert!(!svg.contains("<x>"));
    }
}

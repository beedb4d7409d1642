//! The SVG plot: decisive unsafe-acceptance and over-abstention against the threshold, per
//! config, with the configured threshold marked (plotters, SVG backend).
use plotters::prelude::*;
use std::path::Path;

use super::report::AssessorOutcome;
use crate::error::{EvalError, Result};

const COLOURS: [RGBColor; 4] =
    [RGBColor(200, 30, 30), RGBColor(30, 90, 200), RGBColor(220, 120, 0), RGBColor(20, 140, 60)];

/// Write the plot to `path`.
pub fn write_svg(outcome: &AssessorOutcome, path: &Path) -> Result<()> {
    let err = |e: String| EvalError::io(path, format!("plotting: {e}"));
    {
        let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Assessor: decisive cases vs threshold", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0f64..1.0f64, 0.0f64..1.05f64)
            .map_err(|e| err(e.to_string()))?;
        chart.configure_mesh().x_desc("threshold").y_desc("rate").draw().map_err(|e| err(e.to_string()))?;
        let mut colour = 0usize;
        for r in &outcome.results {
            let series = [
                (
                    "unsafe-acceptance",
                    r.sweep.iter().map(|s| (s.threshold, s.unsafe_acceptance.value)).collect::<Vec<_>>(),
                ),
                ("over-abstention", r.sweep.iter().map(|s| (s.threshold, s.over_abstention.value)).collect::<Vec<_>>()),
            ];
            for (name, points) in series {
                let c = COLOURS[colour % COLOURS.len()];
                colour += 1;
                chart
                    .draw_series(LineSeries::new(points, c.stroke_width(2)))
                    .map_err(|e| err(e.to_string()))?
                    .label(format!("{name} ({})", r.info.name))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
            }
            let t = r.threshold;
            chart
                .draw_series(LineSeries::new(vec![(t, 0.0), (t, 1.05)], BLACK.mix(0.4)))
                .map_err(|e| err(e.to_string()))?
                .label(format!("threshold {t:.2} ({})", r.info.name))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(())
}

//! [`DenseState`]: how one namespace's dense search stands (IVF lists, probes, the rows it
//! was trained on and the rows filed since), reported as figures by the index so a benchmark
//! can show why a dense search costs what it does.
use mnemo_contract::IndexFigure;

/// How one namespace's dense search stands (see [`AnnVectors::state_of`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DenseState {
    /// Vectors held.
    pub rows: usize,
    /// IVF lists (0: searched exactly).
    pub lists: usize,
    /// Lists a search scans (1 when exact: the one block).
    pub nprobe: usize,
    /// Whether the probe count was calibrated (else the configured `ivf_nprobe`).
    pub calibrated: bool,
    /// Rows when the IVF was trained (0 when exact).
    pub trained_rows: usize,
    /// Rows when its probe count was last calibrated (0: never).
    pub calibrated_rows: usize,
    /// Rows of the median and of the largest list.
    pub median_list: usize,
    /// See `median_list`.
    pub largest_list: usize,
    /// Whether a training or a calibration is in flight.
    pub training: bool,
    /// Trainings started by this store (all namespaces).
    pub trainings_started: usize,
}

impl DenseState {
    /// The state as named figures (`dense_*`).
    pub fn figures(&self) -> Vec<IndexFigure> {
        let f = |name, value: usize, unit, note: &str| IndexFigure {
            name,
            value: value as f64,
            unit,
            note: note.to_string(),
        };
        let mean = if self.lists > 0 { self.rows as f64 / self.lists as f64 } else { self.rows as f64 };
        vec![
            f("dense_rows", self.rows, "vectors", "vectors of the namespace in the dense index"),
            f("dense_ivf_lists", self.lists, "lists", "IVF lists (0: searched exactly)"),
            f(
                "dense_ivf_nprobe",
                self.nprobe,
                "lists",
                if self.calibrated {
                    "lists a search scans, calibrated on the namespace's own vectors (at least ivf_nprobe)"
                } else {
                    "lists a search scans: ivf_nprobe (not calibrated)"
                },
            ),
            IndexFigure {
                name: "dense_probed_rows",
                value: mean * self.nprobe as f64,
                unit: "rows",
                note: "rows a search scans on average (probes × mean list size)".to_string(),
            },
            f("dense_ivf_trained_rows", self.trained_rows, "vectors", "vectors when the IVF in use was trained"),
            f(
                "dense_ivf_calibrated_rows",
                self.calibrated_rows,
                "vectors",
                "vectors when its probe count was last calibrated (again every 20% of growth)",
            ),
            f(
                "dense_filed_since_training",
                self.rows.saturating_sub(self.trained_rows),
                "vectors",
                "vectors filed under the existing centroids since that training (net)",
            ),
            f("dense_ivf_median_list", self.median_list, "rows", "rows of the median list"),
            f("dense_ivf_largest_list", self.largest_list, "rows", "rows of the largest list"),
            f(
                "dense_training_in_flight",
                usize::from(self.training),
                "bool",
                "a background training or calibration is running",
            ),
            f(
                "dense_trainings_started",
                self.trainings_started,
                "trainings",
                "background trainings started by this index",
            ),
        ]
    }
}

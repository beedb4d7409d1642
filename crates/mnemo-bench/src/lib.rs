//! Mnemo benchmarks, as library functions the CLI wires to `mnemo bench locomo`,
//! `mnemo bench longmemeval`, `mnemo bench scale`, …:
//! - [`locomo`]: retrieval under a token budget on LoCoMo-format data (docs/metrics.md, "Retrieval
//!   under a budget"): evidence recall@B, R@k and MRR per category, for BM25, dense, hybrid
//!   and RecentOnly in one run.
//! - [`longmemeval`]: retrieval over LongMemEval haystacks, one namespace per question:
//!   session and turn recall@k, NDCG@10 and evidence recall within a budget per question type,
//!   abstention questions apart, for BM25, dense and hybrid.
//! - [`scale`]: synthetic memories with precomputed embeddings: ingest throughput, recall
//!   latency, index rebuild time, peak RSS and bytes on disk per memory.
//! - [`cli_churn`]: single writes each its own process, as with the CLI; the index's segments,
//!   leftover temporary files and recall p50 against a rebuilt index.
//! - [`poisoning`]: memory-poisoning attacks through the write path against benign look-alikes:
//!   attack success and benign false rejection per family, with and without each defence.
//! - [`tokens`]: the token cost of the prose demo, replayed from a cassette, per call kind and
//!   per agent turn.
//!
//! Each returns a [`BenchReport`]: `{"provenance": {...}, "rows": [...]}` plus a markdown table.
//!
//! [`reliability`] is the harness behind `mnemo reliability` (kill, damage, use and fuzz
//! trials against a `mnemo` binary): it returns its rows, and the CLI reports them.
#![deny(missing_docs)]

pub mod answerability;
pub mod bench_index;
pub mod churn;
pub mod embed_cache;
pub mod error;
pub mod locomo;
pub mod longmemeval;
pub mod poisoning;
pub mod reliability;
pub mod report;
pub mod rng;
pub mod scale;
pub mod tokens;
pub mod util;

pub use answerability::{answerability, AnswerabilityArgs, GateConfig};
pub use bench_index::ConfiguredIndex;
pub use churn::{cli_churn, ChurnArgs};
pub use error::{BenchError, Result};
pub use locomo::{locomo, LocomoArgs, RetrievalFlags};
pub use longmemeval::{longmemeval, LongMemEvalArgs};
pub use poisoning::{poisoning, PoisoningArgs};
pub use report::BenchReport;
pub use scale::{scale, ScaleArgs};
pub use tokens::TokensArgs;

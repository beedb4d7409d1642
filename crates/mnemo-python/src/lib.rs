//! `mnemo._native`: Mnemo's embedded engine for Python.
//!
//! A local door, like the command line: it opens a data directory with a config (the embedded
//! default when none is named), takes the directory's write lock (a read-only Engine keeps
//! none), and answers each call with
//! the JSON the HTTP door answers for the same call (so the Python layer reads one format).
//! The rules live in mnemo-agent (`door`): this crate only translates arguments and answers.
//!
//! Every call releases the GIL while Rust works, so Python threads and `asyncio.to_thread`
//! run beside it. Nothing is printed on stdout; logs go to stderr only when `RUST_LOG` or
//! `MNEMO_LOG` is set.
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyLookupError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyInt, PyTuple, PyType};
use serde::Serialize;

use mnemo_agent::door::{self, ChatMessage, RecallAnswer, RecallInput, RememberInput, TurnInput, OPERATOR};
use mnemo_agent::error::ErrorKind;
use mnemo_agent::escalation::{BadEscalationId, EscalationId};
use mnemo_agent::{Access, AgentError, AgentRecall, Config, Detail, ReasonerBuild, Runtime};
use mnemo_contract::{BadId, ClaimKey, CoreError, ForgetCommand, IdRef, Namespace, SearchMode, SystemClock, Timestamp};

// The component kinds this module offers (store, index, models, grounders; the optional ones
// with their features, or as NOT BUILT placeholders): the list the command line links too.
use mnemo_kinds as _;

create_exception!(
    mnemo._native,
    MnemoError,
    PyException,
    "Every error of Mnemo. The message is the error's whole chain on one line."
);
create_exception!(
    mnemo._native,
    ConflictError,
    MnemoError,
    "The call contradicts what is recorded: an idempotency key used before with another text, an escalation \
     already answered or dismissed."
);
create_exception!(
    mnemo._native,
    BusyError,
    MnemoError,
    "Another writer holds the data directory (MNEMO_LOCK_TIMEOUT_SECS sets the wait), the store or the index, or \
     (over HTTP) the server sheds requests above its limit: retrying later may work."
);
create_exception!(
    mnemo._native,
    ReadOnlyError,
    MnemoError,
    "The store or index cannot be written here (or the Engine was opened read_only): reads still work."
);
create_exception!(
    mnemo._native,
    RateLimitedError,
    MnemoError,
    "The model endpoint asked to slow down, or (over HTTP) the token made its requests for the server's window: \
     back off and retry."
);
create_exception!(
    mnemo._native,
    ModelError,
    MnemoError,
    "A model call failed (the endpoint, its answer, the embedder)."
);
create_exception!(
    mnemo._native,
    UnextractedError,
    MnemoError,
    "The turn is recorded but nothing was derived from it (the model failed); `mnemo reextract` retries it."
);
create_exception!(
    mnemo._native,
    ConfigError,
    MnemoError,
    "A configuration file, setting, kind or plugin is wrong, or the model client asked for cannot be had \
     (live without its key)."
);
create_exception!(
    mnemo._native,
    UnsupportedError,
    MnemoError,
    "What was asked is not something this backend or model does."
);

/// `InvalidInputError(MnemoError, ValueError)` and `NotFoundError(MnemoError, LookupError)`:
/// two bases each, which `create_exception!` cannot make, so made with `type(…)` once.
static INVALID_INPUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static NOT_FOUND: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const INVALID_INPUT_DOC: &str =
    "The input is refused (the message names what is wrong): fix it and send it again. Also a ValueError.";
const NOT_FOUND_DOC: &str = "No such memory, turn or escalation in this namespace. Also a LookupError.";

fn two_based<'py>(
    py: Python<'py>,
    cell: &PyOnceLock<Py<PyType>>,
    name: &str,
    doc: &str,
    other: Bound<'py, PyType>,
) -> PyResult<Bound<'py, PyType>> {
    let t = cell.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(py, [py.get_type::<MnemoError>(), other])?;
        let dict = PyDict::new(py);
        dict.set_item("__doc__", doc)?;
        dict.set_item("__module__", "mnemo._native")?;
        let made = py.get_type::<PyType>().call1((name, bases, dict))?;
        Ok(made.cast_into::<PyType>()?.unbind())
    })?;
    Ok(t.bind(py).clone())
}

fn invalid_input_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    two_based(py, &INVALID_INPUT, "InvalidInputError", INVALID_INPUT_DOC, py.get_type::<PyValueError>())
}

fn not_found_type(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    two_based(py, &NOT_FOUND, "NotFoundError", NOT_FOUND_DOC, py.get_type::<PyLookupError>())
}

/// A failure as Python is told it: the kind picks the exception class (None: `MnemoError`
/// itself), the message is the error's chain on one line.
struct Failure {
    kind: Option<ErrorKind>,
    message: String,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Self {
        Failure { kind: Some(ErrorKind::InvalidInput), message: message.into() }
    }

    fn internal(message: impl Into<String>) -> Self {
        Failure { kind: Some(ErrorKind::Internal), message: message.into() }
    }

    /// Said before the line of an error: where it happened (as the CLI's context lines).
    fn context(mut self, what: impl std::fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    fn into_py(self, py: Python<'_>) -> PyErr {
        let Failure { kind, message } = self;
        let two = |t: PyResult<Bound<'_, PyType>>| match t {
            Ok(t) => PyErr::from_type(t, message.clone()),
            Err(e) => e,
        };
        match kind {
            None | Some(ErrorKind::Internal) => MnemoError::new_err(message),
            Some(ErrorKind::InvalidInput) => two(invalid_input_type(py)),
            Some(ErrorKind::NotFound) => two(not_found_type(py)),
            Some(ErrorKind::Conflict) => ConflictError::new_err(message),
            Some(ErrorKind::Busy) => BusyError::new_err(message),
            Some(ErrorKind::ReadOnly) => ReadOnlyError::new_err(message),
            Some(ErrorKind::RateLimited) => RateLimitedError::new_err(message),
            Some(ErrorKind::Model) => ModelError::new_err(message),
            Some(ErrorKind::Unextracted) => UnextractedError::new_err(message),
            Some(ErrorKind::Config) => ConfigError::new_err(message),
            Some(ErrorKind::Unsupported) => UnsupportedError::new_err(message),
        }
    }
}

/// `top: cause: cause…`, leaving out a cause whose text the line already holds (the CLI's
/// rule: library errors often quote their source in their own message).
fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

impl From<AgentError> for Failure {
    fn from(e: AgentError) -> Self {
        Failure { kind: Some(e.kind()), message: one_line(&e) }
    }
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Self {
        AgentError::Core(e).into()
    }
}

impl From<mnemo_llm::LlmError> for Failure {
    fn from(e: mnemo_llm::LlmError) -> Self {
        let kind = match e {
            mnemo_llm::LlmError::InvalidSetting(_) => ErrorKind::Config,
            _ => ErrorKind::Model,
        };
        Failure { kind: Some(kind), message: one_line(&e) }
    }
}

/// `v` as the JSON a tenant is shown (short ids, no vectors, no store-wide counters): what
/// every door answers (the HTTP routes' `to_value`).
fn tenant<T: Serialize + ?Sized>(v: &T) -> Result<serde_json::Value, Failure> {
    mnemo_agent::json_view::tenant_json(v, false).map_err(|e| Failure::internal(format!("cannot encode: {e}")))
}

/// The text of an answer.
fn json_text(v: &serde_json::Value) -> Result<String, Failure> {
    serde_json::to_string(v).map_err(|e| Failure::internal(format!("cannot encode: {e}")))
}

// The HTTP door's answer bodies (mnemo-server's `api`), field for field, so that an answer
// here is the body the server sends for the same call.

/// `POST remember` / `POST forget`.
#[derive(Serialize)]
struct RememberResponse {
    principal: String,
    report: serde_json::Value,
}

/// `POST forget` with `dry_run`.
#[derive(Serialize)]
struct ForgetPreviewResponse {
    principal: String,
    preview: serde_json::Value,
    text: String,
}

/// `POST recall` with `detail = "full"`.
#[derive(Serialize)]
struct RecallResponse {
    pack: serde_json::Value,
    assessment: Option<serde_json::Value>,
    verdict: Option<serde_json::Value>,
    action: Option<String>,
}

/// `POST turn` (compact).
#[derive(Serialize)]
struct TurnView {
    principal: String,
    remembered: serde_json::Value,
    recall: AgentRecall,
    text: String,
}

/// `POST turn` with `detail = "full"`.
#[derive(Serialize)]
struct TurnResponse {
    principal: String,
    turn: serde_json::Value,
}

/// `GET memories/{id}`.
#[derive(Serialize)]
struct WhyResponse {
    why: serde_json::Value,
    text: String,
}

/// `GET history`.
#[derive(Serialize)]
struct HistoryResponse {
    history: mnemo_agent::claim_history::ClaimHistory,
    text: String,
}

/// `GET memories`.
#[derive(Serialize)]
struct ListResponse {
    memories: Vec<serde_json::Value>,
    next_after: Option<String>,
}

/// `GET escalations`.
#[derive(Serialize)]
struct EscalationList {
    escalations: Vec<serde_json::Value>,
}

/// A memory id as Python gives it: `"m42"`, `"42"`, or a number. Anything else (a float, a
/// list, a bool) is an `InvalidInputError` naming the argument and the type given.
enum IdArg {
    Number(i64),
    Text(String),
}

impl<'a, 'py> FromPyObject<'a, 'py> for IdArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let refuse = |what: String| Failure::invalid(what).into_py(obj.py());
        if obj.is_instance_of::<PyBool>() {
            return Err(refuse("id must be a memory id such as \"m42\" or an int, got bool".to_string()));
        }
        if obj.is_instance_of::<PyInt>() {
            return obj
                .extract::<i64>()
                .map(IdArg::Number)
                .map_err(|_| refuse(format!("id {} is not a memory id", &*obj)));
        }
        if let Ok(t) = obj.extract::<String>() {
            return Ok(IdArg::Text(t));
        }
        let given = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "another type".to_string());
        Err(refuse(format!("id must be a memory id such as \"m42\" or an int, got {given}")))
    }
}

impl IdArg {
    fn id_ref(&self) -> Result<IdRef, Failure> {
        match self {
            IdArg::Number(n) => IdRef::from_number(*n),
            IdArg::Text(t) => t.parse(),
        }
        .map_err(|e: BadId| Failure::invalid(e.to_string()))
    }
}

fn budget_arg(budget: Option<i64>) -> Result<Option<usize>, Failure> {
    budget
        .map(|b| usize::try_from(b).map_err(|_| Failure::invalid(format!("budget must be 0 or more tokens, got {b}"))))
        .transpose()
}

fn about_arg(about: Option<&str>) -> Result<Option<ClaimKey>, Failure> {
    Ok(about.map(str::parse::<ClaimKey>).transpose()?)
}

fn claim_arg(claim: &str) -> Result<ClaimKey, Failure> {
    Ok(claim.parse::<ClaimKey>()?)
}

fn detail_arg(detail: &str) -> Result<Detail, Failure> {
    detail.parse().map_err(|e: mnemo_agent::agent_view::UnknownDetail| Failure::invalid(e.to_string()))
}

fn time_arg(field: &str, t: Option<&str>) -> Result<Option<Timestamp>, Failure> {
    t.map(door::parse_time).transpose().map_err(|e| Failure::invalid(format!("{field} {e}")))
}

fn escalation_arg(id: &str) -> Result<EscalationId, Failure> {
    id.parse().map_err(|e: BadEscalationId| Failure::invalid(e.to_string()))
}

/// Chat messages from Python dicts `{role, content, timestamp?}`.
fn messages_arg(messages: &[Bound<'_, PyAny>]) -> Result<Vec<ChatMessage>, Failure> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let shape = || {
            Failure::invalid(format!(
                "message {i} is not a message: send a dict {{\"role\": …, \"content\": …, \"timestamp\"?: …}}"
            ))
        };
        let d = m.cast::<PyDict>().map_err(|_| shape())?;
        let field = |key: &str| -> Result<Option<String>, Failure> {
            match d.get_item(key).map_err(|_| shape())? {
                None => Ok(None),
                Some(v) if v.is_none() => Ok(None),
                Some(v) => v
                    .extract::<String>()
                    .map(Some)
                    .map_err(|_| Failure::invalid(format!("message {i}: {key} must be text"))),
            }
        };
        let role = field("role")?.ok_or_else(|| Failure::invalid(format!("message {i} has no role")))?;
        let content = field("content")?.ok_or_else(|| Failure::invalid(format!("message {i} has no content")))?;
        let timestamp = time_arg(&format!("message {i}: timestamp"), field("timestamp")?.as_deref())?;
        out.push(ChatMessage { role, content, timestamp });
    }
    Ok(out)
}

/// The answer to a recall, as `POST recall` sends it.
async fn recall_json(rt: &Runtime, ns: &Namespace, input: &RecallInput) -> Result<String, Failure> {
    let v = match rt.recall_input(ns, input).await? {
        RecallAnswer::Compact(view) => tenant(&rt.with_text(*view))?,
        RecallAnswer::FullRaw(pack) => {
            tenant(&RecallResponse { pack: tenant(&pack)?, assessment: None, verdict: None, action: None })?
        }
        RecallAnswer::Full(t) => tenant(&RecallResponse {
            pack: tenant(&t.pack)?,
            assessment: Some(tenant(&t.assessment)?),
            verdict: Some(tenant(&t.verdict)?),
            action: Some(t.action),
        })?,
    };
    json_text(&v)
}

/// The model seam the config and the environment ask for (as `mnemo` resolves it).
fn seam(config: &Config) -> Result<mnemo_llm::seam::Seam, Failure> {
    let settings = mnemo_llm::seam::LlmSettings::from_table(&config.llm())?;
    Ok(mnemo_llm::seam::resolve_from_process(settings)?)
}

/// What opening found: the runtime, who answers model calls, the declared sources.
struct Opened {
    rt: Runtime,
    model: String,
    declared: Vec<String>,
}

/// Open `data_dir` as the command line does (`context::config_for` then `context::runtime`).
async fn open(data_dir: &Path, files: &[PathBuf], live: bool, read_only: bool) -> Result<Opened, Failure> {
    // A config file that cannot be read is a configuration mistake here.
    let config_failure = |e: AgentError| match e {
        AgentError::Io { .. } => Failure { kind: Some(ErrorKind::Config), message: one_line(&e) },
        e => e.into(),
    };
    let mut config = Config::load(files).map_err(config_failure)?;
    if live {
        let o: toml::Table = toml::from_str("[llm]\nclient = \"live\"")
            .map_err(|e| Failure::internal(format!("the live override does not parse: {e}")))?;
        config = config.with_overrides(&o, "live=True")?;
    }
    // A writer calls the model (extraction): a seam that cannot be honoured (live without its
    // key, live with MNEMO_OFFLINE=1) is refused before anything is written. A read-only
    // Engine never calls it, and opens anyway.
    let model = match seam(&config) {
        Ok(s) => s.describe(),
        Err(e) if read_only => {
            format!("model client unavailable ({}); a read-only Engine does not call the model", e.message)
        }
        Err(e) => return Err(e),
    };
    // A read-only Engine never keeps the data directory's lock (it may stay open for long, and
    // a writer, `mnemo serve`, must be able to start beside it): `Runtime::build_reader`.
    let clock = Arc::new(SystemClock);
    let rt = if read_only {
        Runtime::build_reader(&config, data_dir, clock, Vec::new()).await
    } else {
        Runtime::build_for(&config, data_dir, clock, Vec::new(), &|_, _| {}, ReasonerBuild::AtBuild, Access::Write)
            .await
    }
    .map_err(|e| Failure::from(e).context(format_args!("opening Mnemo in {}", data_dir.display())))?;
    if let Some(why) = &rt.startup_sync().rebuilt_because {
        tracing::info!(memories = rt.startup_sync().upserted, "the index was rebuilt from the store: {why}");
    }
    let declared = rt.config().declared_sources();
    Ok(Opened { rt, model, declared })
}

/// Logs on stderr when `RUST_LOG` or `MNEMO_LOG` asks for them (an `EnvFilter` directive such
/// as `info` or `mnemo_core=debug`); otherwise nothing is logged.
fn init_logs() {
    for var in ["MNEMO_LOG", "RUST_LOG"] {
        if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env(var) {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .try_init();
            return;
        }
    }
}

/// Mnemo's engine over one data directory, in this process.
///
/// `Engine(data_dir, namespace="default", config=None, live=False, read_only=False)` opens
/// (or creates) `data_dir` with the config files named (later ones override earlier ones, as
/// `mnemo --config`; none: the embedded default — SQLite, the built-in index, the offline
/// deterministic model). `live=True` is `mnemo --live` (`[llm] client = "live"`): asking for
/// it without its key is a `ConfigError`. It holds the data directory's write lock until
/// `close()`, as `mnemo` does (a second writer waits `MNEMO_LOCK_TIMEOUT_SECS`, default 30 s,
/// then gets `BusyError`). `read_only=True` never keeps the lock: it reads beside a writer
/// that holds it (a running `mnemo serve`), a writer can start beside it at any time, and it
/// refuses every write with `ReadOnlyError` (with no writer present, opening first creates the
/// store of a new directory and catches its index up, holding the lock only for that).
///
/// Each call answers the JSON text the HTTP API answers for the same call, and releases the
/// GIL while it works: calls from several threads run at once.
#[pyclass(frozen, module = "mnemo._native", name = "Engine")]
pub struct Engine {
    /// The async runtime every call is driven on. Multi-threaded, with two workers: the
    /// engine's blocking work (SQLite, the index) uses `block_in_place`, which needs a
    /// multi-threaded runtime, and background writes (recall's access times) run on the
    /// workers. Each Python thread drives its own call with `block_on` (the GIL released), so
    /// calls from several threads run at once rather than queueing behind one lock. None only
    /// while the Engine is dropped (`Drop` takes it, to shut it down where blocking is allowed).
    tokio: Option<tokio::runtime::Runtime>,
    /// The runtime; None once closed.
    open: RwLock<Option<Arc<Runtime>>>,
    namespace: Namespace,
    data_dir: String,
    model: String,
    declared: Vec<String>,
    read_only: bool,
}

impl Engine {
    /// The runtime, or the error of a closed Engine.
    fn runtime(&self) -> Result<Arc<Runtime>, Failure> {
        let open = self.open.read().unwrap_or_else(PoisonError::into_inner);
        open.clone().ok_or_else(|| Failure {
            kind: None,
            message: format!("this Engine is closed (data directory {}): open a new one", self.data_dir),
        })
    }

    /// Run `f` on the runtime with the GIL released.
    fn run<T, F, Fut>(&self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send,
        F: FnOnce(Arc<Runtime>) -> Fut + Send,
        Fut: Future<Output = Result<T, Failure>>,
    {
        py.detach(|| {
            let rt = self.runtime()?;
            let tokio = self.tokio.as_ref().ok_or_else(|| Failure {
                kind: None,
                message: format!("this Engine is closed (data directory {}): open a new one", self.data_dir),
            })?;
            tokio.block_on(f(rt))
        })
        .map_err(|e| e.into_py(py))
    }

    /// The namespace of a call: the one given, else the Engine's.
    fn ns(&self, given: Option<&str>) -> Result<Namespace, Failure> {
        match given {
            None => Ok(self.namespace.clone()),
            Some(n) => Ok(Namespace::new(n)?),
        }
    }

    /// A write on a read-only Engine is refused.
    fn writable(&self, what: &str) -> Result<(), Failure> {
        if self.read_only {
            return Err(Failure {
                kind: Some(ErrorKind::ReadOnly),
                message: format!("{what} writes memory, and this Engine was opened read_only"),
            });
        }
        Ok(())
    }

    /// Save the index after a write (as `mnemo mcp` does after each call); the store holds
    /// the truth already, so a failure is a warning (the next open catches the index up).
    async fn flush(rt: &Runtime) {
        if let Err(e) = rt.engine().flush_index().await {
            tracing::warn!("the index could not be saved ({e}); the next open catches it up from the store");
        }
    }

    /// Close on `tokio`: wait for the calls in flight, save the index, release the lock. Called
    /// where blocking is allowed ([`outside_async`]).
    fn shut(&self, tokio: &tokio::runtime::Runtime) {
        let taken = self.open.write().unwrap_or_else(PoisonError::into_inner).take();
        let Some(mut rt) = taken else { return };
        let rt = loop {
            match Arc::try_unwrap(rt) {
                Ok(rt) => break rt,
                Err(shared) => {
                    rt = shared;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        };
        tokio.block_on(Self::flush(&rt));
        let _in_runtime = tokio.enter();
        drop(rt);
    }
}

/// Runs `f` where blocking on a runtime is allowed: on this thread, unless it is inside a tokio
/// runtime (an async caller, another runtime's worker), where `block_on` and dropping a runtime
/// panic; then on a thread of its own. A panic of `f` is returned, never raised here.
fn outside_async<T: Send>(f: impl FnOnce() -> T + Send) -> std::thread::Result<T> {
    if tokio::runtime::Handle::try_current().is_err() {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    }
    std::thread::scope(|s| s.spawn(f).join())
}

impl Drop for Engine {
    /// Python drops an Engine with the GIL held (its last reference gone, or the garbage
    /// collector): the GIL is let go while the index is saved and the runtime shut down, so
    /// other Python threads run meanwhile; nothing here blocks on a runtime from inside an async
    /// context, and nothing panics (a failure is logged: the next open catches the index up
    /// from the store).
    fn drop(&mut self) {
        let Some(tokio) = self.tokio.take() else { return };
        let this = &*self;
        let teardown = move || {
            let done = outside_async(move || {
                this.shut(&tokio);
                drop(tokio);
            });
            if done.is_err() {
                tracing::error!(
                    data_dir = %this.data_dir,
                    "closing the Engine failed (a panic); the next open catches the index up from the store"
                );
            }
        };
        let mut pending = Some(teardown);
        // At interpreter shutdown Python cannot be attached to: the teardown then runs as it is.
        let _ = Python::try_attach(|py| py.detach(|| pending.take().map(|f| f())));
        if let Some(f) = pending.take() {
            f();
        }
    }
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (data_dir, namespace = "default", config = None, live = false, read_only = false))]
    fn new(
        py: Python<'_>,
        data_dir: PathBuf,
        namespace: &str,
        config: Option<Vec<PathBuf>>,
        live: bool,
        read_only: bool,
    ) -> PyResult<Self> {
        let namespace = Namespace::new(namespace).map_err(|e| Failure::from(e).into_py(py))?;
        let files = config.unwrap_or_default();
        py.detach(|| -> Result<Engine, Failure> {
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("mnemo-worker")
                .enable_all()
                .build()
                .map_err(|e| Failure::internal(format!("cannot start the async runtime: {e}")))?;
            let opened = tokio.block_on(open(&data_dir, &files, live, read_only))?;
            Ok(Engine {
                tokio: Some(tokio),
                open: RwLock::new(Some(Arc::new(opened.rt))),
                namespace,
                data_dir: data_dir.display().to_string(),
                model: opened.model,
                declared: opened.declared,
                read_only,
            })
        })
        .map_err(|e| e.into_py(py))
    }

    /// The namespace calls use when they name none.
    #[getter]
    fn namespace(&self) -> &str {
        self.namespace.as_str()
    }

    /// Who answers model calls, as the model seam describes itself (e.g. `model client: fake
    /// (offline, deterministic; …)`).
    #[getter]
    fn model(&self) -> &str {
        &self.model
    }

    /// The data directory, as given.
    #[getter]
    fn data_dir(&self) -> &str {
        &self.data_dir
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.open.read().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    /// Remember a turn: `text` is tagged lines (`[SEM] entity | attribute | value`, `[PROC] …`,
    /// `[EPI] …`, `[FORGET] entity | attribute`) for the offline model, or prose for a live
    /// one. `source` is who said it: a source declared in config (`[sources] declared`) counts
    /// as itself, any other label as the operator ("user", with a note saying so).
    /// `idempotency_key` makes a retry write nothing again (the same key with another text is
    /// a `ConflictError`). `at` dates the turn (RFC 3339 or `YYYY-MM-DD`; at most a day ahead
    /// of the clock, never before the namespace's last turn). Returns the report as JSON:
    /// `status`, `turn`, `outcomes`, `notes`, `model`.
    #[pyo3(signature = (text, *, namespace = None, source = None, idempotency_key = None, at = None))]
    fn remember(
        &self,
        py: Python<'_>,
        text: String,
        namespace: Option<String>,
        source: Option<String>,
        idempotency_key: Option<String>,
        at: Option<String>,
    ) -> PyResult<String> {
        self.run(py, move |rt| async move {
            self.writable("remember")?;
            let ns = self.ns(namespace.as_deref())?;
            let at = time_arg("at", at.as_deref())?;
            let (source, note) = door::operator_source(source.as_deref(), &self.declared);
            let input = RememberInput { source, text, idempotency_key, at };
            let mut r = rt.remember_input(&ns, &input).await?;
            r.notes.extend(note);
            Self::flush(&rt).await;
            text_of(&r)
        })
    }

    /// Remember a conversation: `messages` are dicts `{"role", "content", "timestamp"?}`, each
    /// remembered as its own turn, in order. Role `user` is said by `source` (as in
    /// `remember`); any other role (`assistant`, `system`, `tool`) counts as a source by the
    /// same rule (declared: itself; else the operator, with a note). A message's time is its
    /// `timestamp`, else `at`, else now. Everything is checked before the first turn is
    /// written. With `idempotency_key`, message `i` is written under `"{key}#{i}"`. Returns a
    /// JSON array of reports, one per message.
    #[pyo3(signature = (messages, *, namespace = None, source = None, idempotency_key = None, at = None))]
    fn remember_messages(
        &self,
        py: Python<'_>,
        messages: Vec<Bound<'_, PyAny>>,
        namespace: Option<String>,
        source: Option<String>,
        idempotency_key: Option<String>,
        at: Option<String>,
    ) -> PyResult<String> {
        let messages = messages_arg(&messages).map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            self.writable("remember_messages")?;
            let ns = self.ns(namespace.as_deref())?;
            let at = time_arg("at", at.as_deref())?;
            let (user, note) = door::operator_source(source.as_deref(), &self.declared);
            let mut reports = rt.remember_messages(&ns, &user, &messages, idempotency_key.as_deref(), at).await?;
            for (r, m) in reports.iter_mut().zip(&messages) {
                if m.role.trim().eq_ignore_ascii_case(OPERATOR) {
                    r.notes.extend(note.clone());
                }
            }
            Self::flush(&rt).await;
            text_of(&reports)
        })
    }

    /// Recall memories for `query` into a token `budget`, re-check verifiable claims against
    /// the systems of record, grade the pack and decide ACT or ESCALATE (an escalation is
    /// recorded). `mode`: `hybrid`, `lexical` (`bm25`) or `dense` (`vector`); `about`: the
    /// claim the task is about, `"entity | attribute"`; `raw`: plain retrieval (no grade, no
    /// decision). `detail="compact"` answers what an agent reads (the memory lines within the
    /// budget and the decision); `"full"` the pack with its trace, the assessment, the
    /// verdict and the action. `as_of` (RFC 3339 or a date): what memory held at that past
    /// time instead of now; `since` / `until`: only the episodes recorded in that window;
    /// `valid_at`: what was true in the world at that time, by the validity intervals the
    /// turns stated. The JSON of `POST recall`.
    #[pyo3(signature = (query, *, namespace = None, budget = None, mode = None, about = None, raw = false, detail = "compact", as_of = None, since = None, until = None, valid_at = None))]
    #[allow(clippy::too_many_arguments)]
    fn recall(
        &self,
        py: Python<'_>,
        query: String,
        namespace: Option<String>,
        budget: Option<i64>,
        mode: Option<String>,
        about: Option<String>,
        raw: bool,
        detail: &str,
        as_of: Option<String>,
        since: Option<String>,
        until: Option<String>,
        valid_at: Option<String>,
    ) -> PyResult<String> {
        let mut input =
            recall_input(query, budget, mode.as_deref(), about.as_deref(), raw, detail).map_err(|e| e.into_py(py))?;
        input.as_of = time_arg("as_of", as_of.as_deref()).map_err(|e| e.into_py(py))?;
        input.since = time_arg("since", since.as_deref()).map_err(|e| e.into_py(py))?;
        input.until = time_arg("until", until.as_deref()).map_err(|e| e.into_py(py))?;
        input.valid_at = time_arg("valid_at", valid_at.as_deref()).map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            recall_json(&rt, &ns, &input).await
        })
    }

    /// An agent turn: remember `text` (said by `source`, as in `remember`), recall with it as
    /// the query, assess, then on ACT plan from the pack (the plan checked against it), on
    /// ESCALATE record an escalation a human answers. The JSON of `POST turn`: compact
    /// (`principal`, `remembered`, `recall`) or with `detail="full"` the whole turn.
    #[pyo3(signature = (text, *, namespace = None, source = None, budget = None, about = None, detail = "compact"))]
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &self,
        py: Python<'_>,
        text: String,
        namespace: Option<String>,
        source: Option<String>,
        budget: Option<i64>,
        about: Option<String>,
        detail: &str,
    ) -> PyResult<String> {
        let parsed = (|| Ok::<_, Failure>((budget_arg(budget)?, about_arg(about.as_deref())?, detail_arg(detail)?)))();
        let (budget, about, detail) = parsed.map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            self.writable("turn")?;
            let ns = self.ns(namespace.as_deref())?;
            let (source, note) = door::operator_source(source.as_deref(), &self.declared);
            let input = TurnInput { source: source.clone(), text, about, budget };
            let mut t = rt.turn_input(&ns, &input).await?;
            if let Some(r) = t.remembered.as_mut() {
                r.notes.extend(note);
            }
            Self::flush(&rt).await;
            let v = match detail {
                Detail::Compact => {
                    let view = rt.turn_view(&t);
                    let text = rt.render_turn(&view);
                    tenant(&TurnView {
                        principal: source,
                        remembered: tenant(&view.remembered)?,
                        recall: rt.with_text(view.recall),
                        text,
                    })?
                }
                Detail::Full => tenant(&TurnResponse { principal: source, turn: tenant(&t)? })?,
            };
            json_text(&v)
        })
    }

    /// Forget exactly what `command` designates: `"entity | attribute"`, or free text the
    /// model resolves. The memories are tombstoned with the command as the reason, never
    /// deleted; free text takes only memories about it, and a pinned one only with
    /// `include_pinned`. The JSON of `POST forget` (`principal`, `report`); with `dry_run`
    /// nothing is written and the answer is `principal`, `preview`, `text`.
    #[pyo3(signature = (command, *, namespace = None, dry_run = false, include_pinned = false))]
    fn forget(
        &self,
        py: Python<'_>,
        command: String,
        namespace: Option<String>,
        dry_run: bool,
        include_pinned: bool,
    ) -> PyResult<String> {
        let command = ForgetCommand::parse_arg(&command).map_err(|e| Failure::invalid(e).into_py(py))?;
        let input = door::ForgetInput { source: OPERATOR.to_string(), command, dry_run, include_pinned };
        self.run(py, move |rt| async move {
            if !dry_run {
                self.writable("forget")?;
            }
            let ns = self.ns(namespace.as_deref())?;
            let v = match rt.forget_input(&ns, &input).await? {
                door::ForgetAnswer::Forgotten(r) => {
                    Self::flush(&rt).await;
                    tenant(&RememberResponse { principal: OPERATOR.to_string(), report: tenant(&r)? })?
                }
                door::ForgetAnswer::Preview(p) => tenant(&ForgetPreviewResponse {
                    principal: OPERATOR.to_string(),
                    preview: tenant(&p)?,
                    text: p.render(),
                })?,
            };
            json_text(&v)
        })
    }

    /// Erase for good (unlike forget, which tombstones; see docs/erasure.md): `what` is a memory
    /// id (`"m42"`), a turn id (`"t17"`), `"entity | attribute"` (every version of the claim),
    /// or with `subject` an entity. The content leaves the store, the index, the raw turns and
    /// the recall cache; a content-free record (time, reason) stays. Irreversible: try
    /// `dry_run` first. The JSON of `POST erase` (`principal`, `report`, `text`).
    #[pyo3(signature = (what, *, reason, namespace = None, subject = false, dry_run = false))]
    fn erase(
        &self,
        py: Python<'_>,
        what: String,
        reason: String,
        namespace: Option<String>,
        subject: bool,
        dry_run: bool,
    ) -> PyResult<String> {
        let what = door::EraseWhat::parse_arg(&what, subject).map_err(|e| Failure::invalid(e).into_py(py))?;
        let input = door::EraseInput { what, reason, dry_run, by: OPERATOR.to_string() };
        self.run(py, move |rt| async move {
            if !dry_run {
                self.writable("erase")?;
            }
            let ns = self.ns(namespace.as_deref())?;
            let r = rt.erase_input(&ns, &input).await?;
            json_text(&serde_json::json!({"principal": OPERATOR, "report": tenant(&r)?, "text": r.render()}))
        })
    }

    /// A memory's history: the turns it came from, what reinforced it, and if it is
    /// tombstoned, why, when and what superseded it. `id` is `"m42"` as the other calls show
    /// it, `"42"`, or a stored number. The JSON of `GET memories/{id}` (`{"why": …}`).
    #[pyo3(signature = (id, *, namespace = None))]
    fn why(&self, py: Python<'_>, id: IdArg, namespace: Option<String>) -> PyResult<String> {
        let id = id.id_ref().map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let w = rt.why(&ns, id).await?;
            json_text(&tenant(&WhyResponse { why: tenant(&w)?, text: mnemo_agent::why_view::render_why(&w) })?)
        })
    }

    /// The values a claim (`"entity | attribute"`) has had, oldest first: when memory recorded
    /// each, when and why it stopped holding it, and its sources. The JSON of `GET history`
    /// (`history`, `text`).
    #[pyo3(signature = (claim, *, namespace = None))]
    fn history(&self, py: Python<'_>, claim: String, namespace: Option<String>) -> PyResult<String> {
        let key = claim_arg(&claim).map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let h = rt.history_input(&ns, &key).await?;
            let text = h.text();
            json_text(&tenant(&HistoryResponse { history: h, text })?)
        })
    }

    /// One page of the namespace's memories by id, after the memory `after` names (the
    /// previous page's `next_after`); `include_tombstoned` adds forgotten and superseded
    /// ones. The JSON of `GET memories` (`memories`, `next_after`).
    #[pyo3(signature = (*, namespace = None, after = None, limit = 20, include_tombstoned = false))]
    fn list(
        &self,
        py: Python<'_>,
        namespace: Option<String>,
        after: Option<String>,
        limit: i64,
        include_tombstoned: bool,
    ) -> PyResult<String> {
        let max = mnemo_agent::memories::MAX_PAGE;
        let parsed = (|| {
            let after =
                after.as_deref().map(str::parse::<IdRef>).transpose().map_err(|e| Failure::invalid(e.to_string()))?;
            let limit = usize::try_from(limit)
                .ok()
                .filter(|l| (1..=max).contains(l))
                .ok_or_else(|| Failure::invalid(format!("limit must be 1 to {max}, got {limit}")))?;
            Ok::<_, Failure>((after, limit))
        })();
        let (after, limit) = parsed.map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let p = rt.list_after(&ns, after, limit, include_tombstoned).await?;
            let memories = p.memories.iter().map(tenant).collect::<Result<_, _>>()?;
            json_text(&tenant(&ListResponse { memories, next_after: p.next_after.map(|i| i.short()) })?)
        })
    }

    /// Every memory of the namespace as JSON lines, one memory per line (no embedding
    /// vectors): the body of `GET export`.
    #[pyo3(signature = (*, namespace = None, include_tombstoned = false))]
    fn export(&self, py: Python<'_>, namespace: Option<String>, include_tombstoned: bool) -> PyResult<String> {
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let mut body = String::new();
            rt.export(&ns, include_tombstoned, &mut |l: &str| {
                body.push_str(l);
                body.push('\n');
                Ok(())
            })
            .await?;
            Ok(body)
        })
    }

    /// The namespace's escalations, oldest first: the open ones (`open_only=False`: answered
    /// and dismissed ones too). The JSON of `GET escalations` (`{"escalations": […]}`).
    #[pyo3(signature = (*, namespace = None, open_only = true))]
    fn escalations(&self, py: Python<'_>, namespace: Option<String>, open_only: bool) -> PyResult<String> {
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let all = rt.escalations(&ns, open_only).await?;
            let escalations = all.iter().map(tenant).collect::<Result<_, _>>()?;
            json_text(&tenant(&EscalationList { escalations })?)
        })
    }

    /// Answer the open escalation `id` (`"e3"`) as a human: `value` is recorded as their word
    /// on the escalation's claim (memory trusts it most), and the escalation is closed. `by`
    /// may be left out or name the operator ("user"); the answer is the operator's. The JSON of
    /// `POST escalations/{id}/answer`.
    #[pyo3(signature = (id, value, *, namespace = None, by = None))]
    fn answer(
        &self,
        py: Python<'_>,
        id: &str,
        value: String,
        namespace: Option<String>,
        by: Option<String>,
    ) -> PyResult<String> {
        let parsed = (|| {
            let by = door::answerer(by.as_deref(), OPERATOR).map_err(Failure::invalid)?;
            Ok::<_, Failure>((escalation_arg(id)?, by))
        })();
        let (id, by) = parsed.map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            self.writable("answer")?;
            let ns = self.ns(namespace.as_deref())?;
            let done = rt.answer_escalation(&ns, id, &value, &by).await?;
            Self::flush(&rt).await;
            json_text(&tenant(&done)?)
        })
    }

    /// Dismiss the open escalation `id` (`"e3"`) as a human: it is closed and nothing is
    /// recorded in memory. `by` as in `answer`. The JSON of `POST escalations/{id}/dismiss`.
    #[pyo3(signature = (id, *, namespace = None, by = None))]
    fn dismiss(&self, py: Python<'_>, id: &str, namespace: Option<String>, by: Option<String>) -> PyResult<String> {
        let parsed = (|| {
            let by = door::answerer(by.as_deref(), OPERATOR).map_err(Failure::invalid)?;
            Ok::<_, Failure>((escalation_arg(id)?, by))
        })();
        let (id, by) = parsed.map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            self.writable("dismiss")?;
            let ns = self.ns(namespace.as_deref())?;
            let e = rt.dismiss_escalation(&ns, id, &by).await?;
            json_text(&tenant(&e)?)
        })
    }

    /// The namespaces that hold memories or turns, as a JSON array of names.
    fn namespaces(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, move |rt| async move {
            let all = rt.engine().namespaces().await?;
            json_text(&serde_json::Value::from(all.iter().map(|n| n.as_str()).collect::<Vec<_>>()))
        })
    }

    /// Close: wait for calls in flight, save the index and release the data directory's lock.
    /// Any later call raises `MnemoError` ("closed"); closing again does nothing.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Some(tokio) = &self.tokio {
                if let Err(panic) = outside_async(|| self.shut(tokio)) {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!("Engine({:?}, namespace={:?})", self.data_dir, self.namespace.as_str())
    }

    /// Benchmark helper: run the same recall `n` times inside Rust (the path of `recall()`:
    /// the door and the JSON text) and return the seconds each call took, measured with
    /// `std::time::Instant`, the GIL released throughout.
    #[pyo3(signature = (query, n, *, namespace = None, budget = None))]
    fn _time_recall(
        &self,
        py: Python<'_>,
        query: String,
        n: usize,
        namespace: Option<String>,
        budget: Option<i64>,
    ) -> PyResult<Vec<f64>> {
        let input = recall_input(query, budget, None, None, false, "compact").map_err(|e| e.into_py(py))?;
        self.run(py, move |rt| async move {
            let ns = self.ns(namespace.as_deref())?;
            let mut times = Vec::with_capacity(n);
            for _ in 0..n {
                let started = Instant::now();
                let body = recall_json(&rt, &ns, &input).await?;
                std::hint::black_box(body);
                times.push(started.elapsed().as_secs_f64());
            }
            Ok(times)
        })
    }
}

/// A recall's input from Python's arguments.
fn recall_input(
    query: String,
    budget: Option<i64>,
    mode: Option<&str>,
    about: Option<&str>,
    raw: bool,
    detail: &str,
) -> Result<RecallInput, Failure> {
    Ok(RecallInput {
        query,
        budget: budget_arg(budget)?,
        mode: mode.map(str::parse::<SearchMode>).transpose()?,
        about: about_arg(about)?,
        raw,
        detail: detail_arg(detail)?,
        as_of: None,
        since: None,
        until: None,
        valid_at: None,
    })
}

/// A report's JSON text (a tenant's view).
fn text_of<T: Serialize + ?Sized>(v: &T) -> Result<String, Failure> {
    json_text(&tenant(v)?)
}

/// `mnemo._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_logs();
    let py = m.py();
    m.add_class::<Engine>()?;
    m.add("MnemoError", py.get_type::<MnemoError>())?;
    m.add("InvalidInputError", invalid_input_type(py)?)?;
    m.add("NotFoundError", not_found_type(py)?)?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("RateLimitedError", py.get_type::<RateLimitedError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("UnextractedError", py.get_type::<UnextractedError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Which profile compiled the module: benchmarks refuse to trust a debug build's timings.
    m.add("BUILD_PROFILE", if cfg!(debug_assertions) { "debug" } else { "release" })?;
    Ok(())
}

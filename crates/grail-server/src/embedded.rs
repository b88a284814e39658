//! The embedded backend: one model in this process, on a thread of its own, writing
//! several answers at once (continuous batching).
//!
//! The model thread drives a [`BatchDecoder`]: each step is one model call for every
//! answer being written; a request joins at the next step when one of the model's
//! sequences is free and its cache has room, and leaves as soon as its answer ends. A
//! request whose prompt shares a prefix with one in the cache (the same tools and system
//! prompt) reads only the rest ([`Written::cached_tokens`]). Requests beyond the model's
//! sequences wait in a queue of at most [`EmbeddedOptions::queue`] jobs; more are
//! refused with HTTP 503 rather than waiting without bound. A request still queued past
//! its deadline gets a timeout, not a late answer; a client that goes away frees its
//! sequence at the next step. The thread owns the model (a llama.cpp context is not
//! `Send`), loads it itself, and says when it is ready.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use grail_gen::{
    Admission, BatchDecoder, BatchModel, DecodeError, DecodeOptions, Finish, Generation,
    ModelError, PromptError, SequenceId, ToolsShown, chat_prompt_with,
};

use crate::backend::{Activity, Backend, BackendError, Ending, Generate, Written};
use crate::utf8::Utf8Pieces;

/// Loads the model on the model thread.
pub type ModelLoader = Box<dyn FnOnce() -> Result<Box<dyn BatchModel>, String> + Send>;

/// How the embedded backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedOptions {
    /// The most requests waiting for a free sequence (at least 1); more get HTTP 503.
    pub queue: usize,
    /// Append the tokens the grammar forces without drawing them (jump-forward).
    pub jump_forward: bool,
}

impl Default for EmbeddedOptions {
    fn default() -> EmbeddedOptions {
        EmbeddedOptions {
            queue: 64,
            jump_forward: true,
        }
    }
}

/// What the model thread sends back for one job.
enum Event {
    Piece(String),
    Done(Result<Written, BackendError>),
}

struct Job {
    request: Generate,
    events: Sender<Event>,
    cancelled: Arc<AtomicBool>,
}

/// The embedded model behind a queue.
pub struct EmbeddedBackend {
    id: String,
    jobs: Mutex<Option<SyncSender<Job>>>,
    /// The most jobs waiting (in the channel, or taken by the model thread and waiting
    /// for room).
    queue: usize,
    ready: Arc<AtomicBool>,
    failed: Arc<Mutex<Option<String>>>,
    load: Arc<Load>,
}

/// What the model thread has on its hands, for [`EmbeddedBackend::waiting`] and
/// [`EmbeddedBackend::running`].
#[derive(Default)]
struct Load {
    waiting: AtomicUsize,
    running: AtomicUsize,
    sequences: AtomicUsize,
}

impl EmbeddedBackend {
    /// Starts the model thread: it runs `load`, then serves jobs, as many at once as the
    /// model has sequences.
    pub fn start(
        id: impl Into<String>,
        load: ModelLoader,
        options: EmbeddedOptions,
    ) -> EmbeddedBackend {
        let queue = options.queue.max(1);
        // The bound is kept by counting waiting jobs (the model thread holds one of them
        // outside the channel while it waits for room); the channel only needs to fit.
        let (sender, receiver) = mpsc::sync_channel::<Job>(queue + 1);
        let ready = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let load_counts = Arc::new(Load::default());
        let (thread_ready, thread_failed, thread_load) =
            (ready.clone(), failed.clone(), load_counts.clone());
        std::thread::Builder::new()
            .name("grail-model".into())
            .spawn(move || match load() {
                Ok(model) => {
                    thread_load
                        .sequences
                        .store(model.sequences().max(1), Ordering::SeqCst);
                    thread_ready.store(true, Ordering::SeqCst);
                    ModelThread::new(model, options, thread_load).serve(receiver);
                }
                Err(reason) => {
                    *thread_failed.lock().expect("not poisoned") = Some(reason.clone());
                    // Answer whatever was queued, then every later job, with the reason.
                    for job in receiver {
                        thread_load.waiting.fetch_sub(1, Ordering::SeqCst);
                        let _ =
                            job.events
                                .send(Event::Done(Err(BackendError::Unavailable(format!(
                                    "the model could not be loaded: {reason}"
                                )))));
                    }
                }
            })
            .expect("a thread can be started");
        EmbeddedBackend {
            id: id.into(),
            jobs: Mutex::new(Some(sender)),
            queue,
            ready,
            failed,
            load: load_counts,
        }
    }

    /// How many accepted requests wait for a free sequence of the model.
    pub fn waiting(&self) -> usize {
        self.load.waiting.load(Ordering::SeqCst)
    }

    /// How many answers the model is writing now.
    pub fn running(&self) -> usize {
        self.load.running.load(Ordering::SeqCst)
    }

    /// How many answers the model writes at once (0 until it is loaded).
    pub fn sequences(&self) -> usize {
        self.load.sequences.load(Ordering::SeqCst)
    }

    /// Whether the model is writing an answer now.
    pub fn busy(&self) -> bool {
        self.running() > 0
    }

    /// Why the model could not be loaded, if it could not.
    pub fn load_error(&self) -> Option<String> {
        self.failed.lock().expect("not poisoned").clone()
    }

    /// Stops taking jobs; the model thread ends once the queued ones are answered.
    pub fn close(&self) {
        self.jobs.lock().expect("not poisoned").take();
    }
}

impl Backend for EmbeddedBackend {
    fn model_id(&self) -> String {
        self.id.clone()
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    fn failure(&self) -> Option<String> {
        self.load_error()
            .map(|reason| format!("the model could not be loaded: {reason}"))
    }

    fn activity(&self) -> Activity {
        Activity {
            waiting: self.waiting(),
            running: self.running(),
            capacity: self.sequences(),
        }
    }

    fn generate(
        &self,
        request: &Generate,
        observer: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        let (events, replies) = mpsc::channel();
        let cancelled = Arc::new(AtomicBool::new(false));
        let job = Job {
            request: request.clone(),
            events,
            cancelled: cancelled.clone(),
        };
        {
            let jobs = self.jobs.lock().expect("not poisoned");
            let Some(jobs) = jobs.as_ref() else {
                return Err(BackendError::Unavailable(
                    "the server is shutting down".into(),
                ));
            };
            let full =
                || BackendError::Unavailable("the model's queue is full; try again shortly".into());
            // Counted before it is sent, so the model thread never takes one uncounted
            // (and the count, under this lock, is the bound).
            if self.load.waiting.fetch_add(1, Ordering::SeqCst) >= self.queue {
                self.load.waiting.fetch_sub(1, Ordering::SeqCst);
                return Err(full());
            }
            let sent = jobs.try_send(job);
            if sent.is_err() {
                self.load.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            match sent {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => return Err(full()),
                Err(TrySendError::Disconnected(_)) => {
                    return Err(BackendError::Unavailable(
                        "the model thread has stopped".into(),
                    ));
                }
            }
        }
        for event in replies {
            match event {
                Event::Piece(piece) => {
                    if observer(&piece).is_break() {
                        cancelled.store(true, Ordering::SeqCst);
                    }
                }
                Event::Done(result) => return result,
            }
        }
        Err(BackendError::Failed(
            "the model thread stopped mid-answer".into(),
        ))
    }
}

/// An answer being written.
struct Active {
    job: Job,
    pieces: Utf8Pieces,
    prompt_tokens: usize,
}

/// The model thread: the batch decoder and the jobs it writes.
struct ModelThread {
    decoder: BatchDecoder,
    options: EmbeddedOptions,
    load: Arc<Load>,
    active: HashMap<SequenceId, Active>,
    /// A job taken from the queue that waits for room (still counted as waiting).
    next: Option<Job>,
    /// How the model's chat template shows tools (read once: parsing a template per
    /// request would cost as much as a tool-call grammar).
    tools_shown: ToolsShown,
}

impl ModelThread {
    fn new(model: Box<dyn BatchModel>, options: EmbeddedOptions, load: Arc<Load>) -> ModelThread {
        let tools_shown = ToolsShown::for_template(model.chat_template());
        ModelThread {
            tools_shown,
            decoder: BatchDecoder::new(model),
            options,
            load,
            active: HashMap::new(),
            next: None,
        }
    }

    /// Serves jobs until the queue is closed and every answer is written.
    fn serve(mut self, jobs: Receiver<Job>) {
        let mut closed = false;
        loop {
            closed |= self.admit_jobs(&jobs, closed);
            if self.active.is_empty() && self.next.is_none() {
                if closed {
                    return;
                }
                continue;
            }
            self.cancel_abandoned();
            let report = self.decoder.step();
            for (id, bytes) in report.written {
                self.send_piece(id, &bytes);
            }
            for (id, result) in report.finished {
                self.finish(id, result);
            }
        }
    }

    /// Starts queued jobs while the model has room; blocks for one when nothing runs.
    /// Returns whether the queue is closed.
    fn admit_jobs(&mut self, jobs: &Receiver<Job>, closed: bool) -> bool {
        let mut closed = closed;
        loop {
            if self.next.is_none() && !closed {
                let idle = self.active.is_empty();
                let received = if idle {
                    jobs.recv().map_err(|_| TryRecvError::Disconnected)
                } else {
                    jobs.try_recv()
                };
                match received {
                    Ok(job) => self.next = Some(job),
                    Err(TryRecvError::Empty) => return closed,
                    Err(TryRecvError::Disconnected) => closed = true,
                }
            }
            let Some(job) = self.next.take() else {
                return closed;
            };
            match self.start(&job) {
                Ok(Some((id, prompt_tokens))) => {
                    self.load.waiting.fetch_sub(1, Ordering::SeqCst);
                    self.load.running.fetch_add(1, Ordering::SeqCst);
                    self.active.insert(
                        id,
                        Active {
                            job,
                            pieces: Utf8Pieces::default(),
                            prompt_tokens,
                        },
                    );
                }
                Ok(None) => {
                    // No room until a running answer ends.
                    self.next = Some(job);
                    return closed;
                }
                Err(error) => {
                    self.load.waiting.fetch_sub(1, Ordering::SeqCst);
                    let _ = job.events.send(Event::Done(Err(error)));
                }
            }
        }
    }

    /// Admits `job` to the decoder: its id and prompt length, `None` when there is no
    /// room yet, or why it cannot be written.
    fn start(&mut self, job: &Job) -> Result<Option<(SequenceId, usize)>, BackendError> {
        let request = &job.request;
        if job.cancelled.load(Ordering::SeqCst) {
            return Err(BackendError::Unavailable(
                "cancelled before it started".into(),
            ));
        }
        if request
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Err(BackendError::Timeout(
                "the request waited for the model past its time limit (grail serve --request-timeout)"
                    .into(),
            ));
        }
        // A template with a tool section reads the tools and the history its own way.
        let (messages, tools) = match (&request.native, self.tools_shown) {
            (Some(native), ToolsShown::Template) => (&native.messages, native.tools.as_deref()),
            _ => (&request.messages, None),
        };
        let prompt = chat_prompt_with(self.decoder.model(), messages, tools, &request.variables)
            .map_err(|error| match error {
                PromptError::Model(ModelError::ContextFull { .. }) => {
                    BackendError::Request(error.to_string())
                }
                other => BackendError::Failed(other.to_string()),
            })?;
        let options = DecodeOptions {
            max_tokens: request.max_tokens,
            sampling: request.sampling.clone(),
            jump_forward: self.options.jump_forward,
            reasoning_budget: request.reasoning_budget.clone(),
            ..DecodeOptions::default()
        };
        let grammar = request
            .grammar
            .as_ref()
            .map(|grammar| grammar.compiled.as_ref());
        match self.decoder.admit(&prompt, grammar, &options) {
            Ok(Admission::Started(id)) => Ok(Some((id, prompt.len()))),
            Ok(Admission::Busy) => Ok(None),
            Err(error) => Err(decode_error(error)),
        }
    }

    /// Ends the answers whose clients went away.
    fn cancel_abandoned(&mut self) {
        for (&id, active) in &self.active {
            if active.job.cancelled.load(Ordering::SeqCst) {
                self.decoder.cancel(id);
            }
        }
    }

    fn send_piece(&mut self, id: SequenceId, bytes: &[u8]) {
        let Some(active) = self.active.get_mut(&id) else {
            return;
        };
        let piece = active.pieces.push(bytes);
        if !piece.is_empty() && active.job.events.send(Event::Piece(piece)).is_err() {
            self.decoder.cancel(id);
        }
    }

    fn finish(&mut self, id: SequenceId, result: Result<Generation, DecodeError>) {
        let Some(mut active) = self.active.remove(&id) else {
            return;
        };
        self.load.running.fetch_sub(1, Ordering::SeqCst);
        let rest = active.pieces.finish();
        if !rest.is_empty() {
            let _ = active.job.events.send(Event::Piece(rest));
        }
        let written = result.map_err(decode_error).map(|generation| {
            let stats = &generation.stats;
            Written {
                text: generation.text(),
                ending: match generation.finish {
                    Finish::Stop => Ending::Stop,
                    Finish::Length | Finish::Truncated => Ending::Length,
                    Finish::Interrupted => Ending::Interrupted,
                },
                prompt_tokens: active.prompt_tokens,
                // Every token written, the end-of-generation token included.
                completion_tokens: generation.tokens.len(),
                cached_tokens: stats.prompt_tokens - stats.prompt_tokens_read,
                forced_tokens: stats.forced_tokens,
                grammar_seconds: stats.grammar_us.iter().sum::<f64>() / 1e6,
            }
        });
        let _ = active.job.events.send(Event::Done(written));
    }
}

/// A decode error as the server answers it: the request's fault (HTTP 400) or the
/// model's (502).
fn decode_error(error: DecodeError) -> BackendError {
    match error {
        DecodeError::Model(ModelError::ContextFull { .. }) | DecodeError::Options(_) => {
            BackendError::Request(error.to_string())
        }
        other => BackendError::Failed(other.to_string()),
    }
}

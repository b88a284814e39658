//! The embedded backend: one model in this process, on a thread of its own.
//!
//! Requests queue: the model thread writes one answer at a time, in arrival order, and
//! the queue holds at most [`EmbeddedBackend::start`]'s `queue` jobs (more are refused
//! with HTTP 503 rather than waiting without bound). One sequence at a time is what the
//! decode loop and the llama.cpp context it drives support; docs/server.md measures
//! what that means for throughput. The thread owns the model (a llama.cpp context is
//! not `Send`), loads it itself, and says when it is ready.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use grail_gen::{
    DecodeError, DecodeOptions, Finish, Model, ModelError, PromptError, chat_prompt,
    decode_observed,
};

use crate::backend::{Backend, BackendError, Ending, Generate, Written};
use crate::utf8::Utf8Pieces;

/// Loads the model on the model thread.
pub type ModelLoader = Box<dyn FnOnce() -> Result<Box<dyn Model>, String> + Send>;

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
    ready: Arc<AtomicBool>,
    failed: Arc<Mutex<Option<String>>>,
    load: Arc<Load>,
}

/// What the model thread has on its hands, for [`EmbeddedBackend::waiting`] and
/// [`EmbeddedBackend::busy`].
#[derive(Default)]
struct Load {
    waiting: AtomicUsize,
    busy: AtomicBool,
}

impl EmbeddedBackend {
    /// Starts the model thread: it runs `load`, then serves jobs; at most `queue` jobs
    /// wait (at least 1).
    pub fn start(id: impl Into<String>, load: ModelLoader, queue: usize) -> EmbeddedBackend {
        let (sender, receiver) = mpsc::sync_channel::<Job>(queue.max(1));
        let ready = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let load_counts = Arc::new(Load::default());
        let (thread_ready, thread_failed, thread_load) =
            (ready.clone(), failed.clone(), load_counts.clone());
        std::thread::Builder::new()
            .name("grail-model".into())
            .spawn(move || match load() {
                Ok(mut model) => {
                    thread_ready.store(true, Ordering::SeqCst);
                    serve(model.as_mut(), receiver, &thread_load);
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
            ready,
            failed,
            load: load_counts,
        }
    }

    /// How many accepted requests wait for the model (not counting the one it writes).
    pub fn waiting(&self) -> usize {
        self.load.waiting.load(Ordering::SeqCst)
    }

    /// Whether the model is writing an answer now.
    pub fn busy(&self) -> bool {
        self.load.busy.load(Ordering::SeqCst)
    }

    /// Why the model could not be loaded, if it could not.
    pub fn load_error(&self) -> Option<String> {
        self.failed.lock().expect("not poisoned").clone()
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
            // Counted before it is sent, so the model thread never takes one uncounted.
            self.load.waiting.fetch_add(1, Ordering::SeqCst);
            let sent = jobs.try_send(job);
            if sent.is_err() {
                self.load.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            match sent {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    return Err(BackendError::Unavailable(
                        "the model's queue is full; try again shortly".into(),
                    ));
                }
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

/// The model thread's loop.
fn serve(model: &mut dyn Model, jobs: Receiver<Job>, load: &Load) {
    for job in jobs {
        load.busy.store(true, Ordering::SeqCst);
        load.waiting.fetch_sub(1, Ordering::SeqCst);
        if job.cancelled.load(Ordering::SeqCst) {
            load.busy.store(false, Ordering::SeqCst);
            let _ = job.events.send(Event::Done(Err(BackendError::Unavailable(
                "cancelled before it started".into(),
            ))));
            continue;
        }
        let result = write_answer(model, &job);
        load.busy.store(false, Ordering::SeqCst);
        let _ = job.events.send(Event::Done(result));
    }
}

fn write_answer(model: &mut dyn Model, job: &Job) -> Result<Written, BackendError> {
    let request = &job.request;
    if request
        .deadline
        .is_some_and(|deadline| Instant::now() >= deadline)
    {
        return Err(BackendError::Timeout(
            "the request waited for the model past its time limit (grail serve --request-timeout)"
                .into(),
        ));
    }
    let prompt = chat_prompt(model, &request.messages).map_err(|error| match error {
        PromptError::Model(ModelError::ContextFull { .. }) => {
            BackendError::Request(error.to_string())
        }
        other => BackendError::Failed(other.to_string()),
    })?;
    let options = DecodeOptions {
        max_tokens: request.max_tokens,
        sampling: request.sampling.clone(),
        ..DecodeOptions::default()
    };
    let mut pieces = Utf8Pieces::default();
    let mut observer = |bytes: &[u8]| {
        let piece = pieces.push(bytes);
        if !piece.is_empty() && job.events.send(Event::Piece(piece)).is_err() {
            return ControlFlow::Break(());
        }
        if job.cancelled.load(Ordering::SeqCst) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let grammar = request
        .grammar
        .as_ref()
        .map(|grammar| grammar.compiled.as_ref());
    let generation =
        decode_observed(model, &prompt, grammar, &options, &mut observer).map_err(|error| {
            match error {
                DecodeError::Model(ModelError::ContextFull { .. }) | DecodeError::Options(_) => {
                    BackendError::Request(error.to_string())
                }
                other => BackendError::Failed(other.to_string()),
            }
        })?;
    let rest = pieces.finish();
    if !rest.is_empty() {
        let _ = job.events.send(Event::Piece(rest));
    }
    let ending = match generation.finish {
        Finish::Stop => Ending::Stop,
        Finish::Length | Finish::Truncated => Ending::Length,
        Finish::Interrupted => Ending::Interrupted,
    };
    Ok(Written {
        text: generation.text(),
        ending,
        prompt_tokens: prompt.len(),
        // Every token drawn, the end-of-generation token included.
        completion_tokens: generation.tokens.len(),
    })
}

impl EmbeddedBackend {
    /// Stops taking jobs; the model thread ends once the queued ones are answered.
    pub fn close(&self) {
        self.jobs.lock().expect("not poisoned").take();
    }
}

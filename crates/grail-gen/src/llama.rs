//! The embedded runtime: llama.cpp through the `llama-cpp-2` crate (chosen by measurement,
//! see ARCHITECTURE.md): any GGUF model on the CPU. Grail draws the tokens itself from
//! the logits; llama.cpp only computes them.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use grail_vocab::VocabularyIndex;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use self_cell::self_cell;

use crate::batch_model::{BatchModel, SequenceRead};
use crate::model::{Model, ModelError};
use crate::prompt_pieces::{PIECE_BYTES, special_token_pieces};

/// The most context a model gets by default (its trained context when smaller).
pub const DEFAULT_CONTEXT: u32 = 8192;

/// Tokens read per llama.cpp batch while reading a prompt.
const PROMPT_BATCH: usize = 512;

/// llama.cpp's backend: set up once per process, and its logs silenced.
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|reason| format!("llama.cpp's backend did not start: {reason}"))
}

type Context<'model> = LlamaContext<'model>;

self_cell!(
    /// A model and the context (attention cache) that borrows it.
    struct Loaded {
        owner: LlamaModel,
        #[covariant]
        dependent: Context,
    }
);

/// How to load a GGUF model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlamaOptions {
    /// The context length (capped at the model's trained context).
    pub context: u32,
    /// CPU threads (default: the machine's cores).
    pub threads: Option<i32>,
    /// llama.cpp's flash attention. Off by default: on the CPU it was slower, measured with
    /// SmolLM2 on two cores (200 tokens: 116 vs 153 tokens/s after a 37-token prompt, 35
    /// vs 93 after 742 tokens; llama.cpp's own default, "auto", turns it on).
    pub flash_attention: bool,
    /// Sequences held at once, for [`crate::BatchDecoder`] (at least 1).
    pub sequences: usize,
    /// Tokens the attention cache holds over all sequences (default: the context, or
    /// 2,048 per sequence when that is more). One sequence may use up to `context` of
    /// them (with a split cache, up to its share).
    pub cache_tokens: Option<u32>,
    /// One attention cache for all sequences (llama.cpp's `kv_unified`): a shared prompt
    /// prefix is held once, but each token's attention spans every sequence's cells.
    /// Split (false): each sequence has its share of the cache and attends to its own
    /// cells only; a shared prefix is copied (the whole share, then cut).
    pub unified_cache: bool,
}

impl Default for LlamaOptions {
    fn default() -> LlamaOptions {
        LlamaOptions {
            context: DEFAULT_CONTEXT,
            threads: None,
            flash_attention: false,
            sequences: 1,
            cache_tokens: None,
            unified_cache: true,
        }
    }
}

/// Tokens of attention cache set aside per sequence by default when several run.
const DEFAULT_CACHE_PER_SEQUENCE: u32 = 2048;

/// A GGUF model run by llama.cpp.
pub struct LlamaCppModel {
    loaded: Loaded,
    vocabulary: Arc<VocabularyIndex>,
    chat_template: Option<String>,
    begin_of_text: Option<u32>,
    context_length: usize,
    /// Where long prompts may be cut ([`LlamaCppModel::tokenize_in_pieces`]): the texts of
    /// the end-of-generation tokens llama.cpp reads as special and strips nothing beside.
    piece_anchors: Vec<String>,
    /// Every text llama.cpp reads as a special token in a prompt.
    special_texts: Vec<String>,
    /// Tokens the attention cache holds over all sequences.
    cache_tokens: usize,
    /// Each sequence's tokens.
    tokens: Vec<Vec<u32>>,
    /// Each sequence's batch index of the token whose logits are current.
    logits_index: Vec<i32>,
    /// One attention cache for all sequences ([`LlamaOptions::unified_cache`]).
    unified: bool,
    batch: LlamaBatch<'static>,
}

impl std::fmt::Debug for LlamaCppModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LlamaCppModel")
            .field("vocabulary", &self.vocabulary.vocabulary().name())
            .field("context_length", &self.context_length)
            .field("sequences", &self.tokens.len())
            .finish()
    }
}

impl LlamaCppModel {
    /// Loads the GGUF model at `path`: weights through llama.cpp, the vocabulary's exact
    /// token bytes through Grail's own GGUF reader (the same ids).
    pub fn load(path: &Path, options: &LlamaOptions) -> Result<LlamaCppModel, ModelError> {
        let load_error = |reason: String| ModelError::Load {
            path: path.display().to_string(),
            reason,
        };
        if !path.is_file() {
            return Err(load_error("no such file".into()));
        }
        let vocabulary = grail_vocab::load(path).map_err(|error| load_error(error.to_string()))?;
        let backend = backend().map_err(load_error)?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|error| load_error(format!("llama.cpp could not load it: {error}")))?;
        if model.n_vocab() as usize != vocabulary.len() {
            return Err(load_error(format!(
                "its vocabulary has {} tokens for llama.cpp and {} in its metadata",
                model.n_vocab(),
                vocabulary.len()
            )));
        }
        let chat_template = model
            .meta_val_str("tokenizer.chat_template")
            .ok()
            .filter(|template| !template.trim().is_empty());
        let begin_of_text = model
            .vocab()
            .should_add_bos()
            .then(|| model.vocab().bos().0 as u32);
        let (piece_anchors, special_texts) = special_texts(&model, &vocabulary);
        let context = options.context.min(model.n_ctx_train().max(1)).max(16);
        let sequences = options.sequences.max(1);
        let cache_tokens = options
            .cache_tokens
            .unwrap_or_else(|| context.max(DEFAULT_CACHE_PER_SEQUENCE * sequences as u32))
            .max(16);
        let unified = options.unified_cache || sequences == 1;
        let context = if unified {
            context.min(cache_tokens)
        } else {
            context.min(cache_tokens / sequences as u32)
        };
        let threads = options.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, |cores| cores.get() as i32)
        });
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(cache_tokens))
            .with_n_batch(PROMPT_BATCH as u32)
            .with_n_ubatch(PROMPT_BATCH as u32)
            .with_n_seq_max(sequences as u32)
            .with_kv_unified(unified)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(if options.flash_attention {
                llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
            } else {
                llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
            });
        let loaded = Loaded::try_new(model, |model| model.new_context(backend, params))
            .map_err(|error| load_error(format!("llama.cpp could not make a context: {error}")))?;
        Ok(LlamaCppModel {
            loaded,
            vocabulary: Arc::new(VocabularyIndex::new(vocabulary)),
            chat_template,
            begin_of_text,
            context_length: context as usize,
            piece_anchors,
            special_texts,
            cache_tokens: cache_tokens as usize,
            tokens: vec![Vec::new(); sequences],
            logits_index: vec![0; sequences],
            unified,
            batch: LlamaBatch::new(PROMPT_BATCH, 1),
        })
    }
}

/// The texts llama.cpp reads as special tokens in a prompt (control, user-defined and
/// unknown tokens), and among them the end-of-generation tokens that strip no whitespace
/// beside them: where long prompts may be cut.
fn special_texts(
    model: &LlamaModel,
    vocabulary: &grail_vocab::Vocabulary,
) -> (Vec<String>, Vec<String>) {
    use llama_cpp_2::token_type::LlamaTokenAttr;
    let vocab = model.vocab();
    let mut anchors = Vec::new();
    let mut specials = Vec::new();
    for id in 0..vocabulary.len() as u32 {
        let attributes = vocab.attr(LlamaToken(id as i32));
        let read_as_special = attributes.contains(LlamaTokenAttr::Control)
            || attributes.contains(LlamaTokenAttr::UserDefined)
            || attributes.contains(LlamaTokenAttr::Unknown);
        let Ok(text) = std::str::from_utf8(vocabulary.bytes(id)) else {
            continue;
        };
        if !read_as_special || text.is_empty() {
            continue;
        }
        specials.push(text.to_string());
        let strips = attributes.contains(LlamaTokenAttr::LStrip)
            || attributes.contains(LlamaTokenAttr::RStrip);
        if vocabulary.is_end_of_generation(id) && !strips {
            anchors.push(text.to_string());
        }
    }
    (anchors, specials)
}

impl LlamaCppModel {
    /// The tokens of `text` (special tokens' texts read as those tokens) from one call to
    /// llama.cpp's tokenizer, whatever its length: [`Model::tokenize`] cuts long prompts
    /// into pieces first, since llama.cpp's reading of special tokens grows with the
    /// square of their number; this is the reference it is tested against.
    pub fn tokenize_whole(&self, text: &str) -> Vec<u32> {
        let tokens = self
            .loaded
            .borrow_owner()
            .vocab()
            .tokenize(text.as_bytes(), false, true);
        tokens.into_iter().map(|token| token.0 as u32).collect()
    }

    /// The tokens of `text` from pieces of at least `piece_bytes` bytes, cut where
    /// llama.cpp's own split into special tokens and text cuts too (before an end-of-turn
    /// token that follows no whitespace): the tokens of [`LlamaCppModel::tokenize_whole`]
    /// in time linear in the number of special tokens.
    pub fn tokenize_in_pieces(&self, text: &str, piece_bytes: usize) -> Vec<u32> {
        let anchors: Vec<&str> = self.piece_anchors.iter().map(String::as_str).collect();
        let specials: Vec<&str> = self.special_texts.iter().map(String::as_str).collect();
        let mut tokens = Vec::new();
        for piece in special_token_pieces(text, &anchors, &specials, piece_bytes) {
            tokens.extend(self.tokenize_whole(piece));
        }
        tokens
    }
}

impl Model for LlamaCppModel {
    fn vocabulary(&self) -> &Arc<VocabularyIndex> {
        &self.vocabulary
    }

    fn tokenize(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        if text.len() <= PIECE_BYTES {
            return Ok(self.tokenize_whole(text));
        }
        Ok(self.tokenize_in_pieces(text, PIECE_BYTES))
    }

    fn begin_of_text(&self) -> Option<u32> {
        self.begin_of_text
    }

    fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    fn context_length(&self) -> usize {
        self.context_length
    }

    fn tokens(&self) -> &[u32] {
        &self.tokens[0]
    }

    fn truncate(&mut self, len: usize) -> Result<(), ModelError> {
        self.truncate_sequence(0, len)
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<(), ModelError> {
        if tokens.is_empty() {
            return Err(ModelError::Forward("no token to read".into()));
        }
        let needed = self.tokens[0].len() + tokens.len();
        if needed > self.context_length {
            return Err(ModelError::ContextFull {
                needed,
                limit: self.context_length,
            });
        }
        let chunks: Vec<&[u32]> = tokens.chunks(PROMPT_BATCH).collect();
        for (index, chunk) in chunks.iter().enumerate() {
            self.forward_batch(&[SequenceRead {
                sequence: 0,
                tokens: chunk,
                logits: index + 1 == chunks.len(),
            }])?;
        }
        Ok(())
    }

    fn logits(&self) -> &[f32] {
        self.sequence_logits(0)
    }
}

impl BatchModel for LlamaCppModel {
    fn sequences(&self) -> usize {
        self.tokens.len()
    }

    fn batch_tokens(&self) -> usize {
        PROMPT_BATCH
    }

    fn cache_tokens(&self) -> usize {
        self.cache_tokens
    }

    fn sequence_tokens(&self, sequence: usize) -> &[u32] {
        &self.tokens[sequence]
    }

    fn truncate_sequence(&mut self, sequence: usize, len: usize) -> Result<(), ModelError> {
        if len >= self.tokens[sequence].len() {
            return Ok(());
        }
        self.loaded
            .with_dependent_mut(|_, context| {
                context.clear_kv_cache_seq(Some(sequence as u32), Some(len as u32), None)
            })
            .map_err(|error| ModelError::Forward(error.to_string()))?;
        self.tokens[sequence].truncate(len);
        Ok(())
    }

    fn share_prefix(&mut self, from: usize, to: usize, len: usize) -> Result<(), ModelError> {
        let len = len.min(self.tokens[from].len());
        self.truncate_sequence(to, 0)?;
        if len > 0 {
            let unified = self.unified;
            self.loaded
                .with_dependent_mut(|_, context| {
                    if unified {
                        // The cells gain the sequence: nothing is copied.
                        context.copy_kv_cache_seq(from as i32, to as i32, Some(0), Some(len as u32))
                    } else {
                        // Across split caches llama.cpp copies whole shares only.
                        context.copy_kv_cache_seq(from as i32, to as i32, None, None)?;
                        context
                            .clear_kv_cache_seq(Some(to as u32), Some(len as u32), None)
                            .map(|_| ())
                    }
                })
                .map_err(|error| ModelError::Forward(error.to_string()))?;
        }
        let prefix = self.tokens[from][..len].to_vec();
        self.tokens[to] = prefix;
        Ok(())
    }

    fn forward_batch(&mut self, reads: &[SequenceRead<'_>]) -> Result<(), ModelError> {
        let total: usize = reads.iter().map(|read| read.tokens.len()).sum();
        if total > PROMPT_BATCH {
            return Err(ModelError::Forward(format!(
                "{total} tokens in one batch, more than its {PROMPT_BATCH}"
            )));
        }
        let vocabulary_len = self.vocabulary.vocabulary().len();
        self.batch.clear();
        let mut logits_at = Vec::new();
        for read in reads {
            let held = self.tokens[read.sequence].len();
            let needed = held + read.tokens.len();
            if needed > self.context_length {
                return Err(ModelError::ContextFull {
                    needed,
                    limit: self.context_length,
                });
            }
            if read.tokens.is_empty() {
                return Err(ModelError::Forward("no token to read".into()));
            }
            for (offset, &token) in read.tokens.iter().enumerate() {
                if token as usize >= vocabulary_len {
                    return Err(ModelError::Forward(format!(
                        "token {token} is outside the vocabulary"
                    )));
                }
                let last = read.logits && offset + 1 == read.tokens.len();
                if last {
                    logits_at.push((read.sequence, self.batch.n_tokens()));
                }
                self.batch
                    .add(
                        LlamaToken::new(token as i32),
                        (held + offset) as i32,
                        &[read.sequence as i32],
                        last,
                    )
                    .map_err(|error| ModelError::Forward(error.to_string()))?;
            }
        }
        let batch = &mut self.batch;
        self.loaded
            .with_dependent_mut(|_, context| context.decode(batch))
            .map_err(|error| ModelError::Forward(error.to_string()))?;
        for read in reads {
            self.tokens[read.sequence].extend_from_slice(read.tokens);
        }
        for (sequence, index) in logits_at {
            self.logits_index[sequence] = index;
        }
        Ok(())
    }

    fn sequence_logits(&self, sequence: usize) -> &[f32] {
        self.loaded
            .borrow_dependent()
            .get_logits_ith(self.logits_index[sequence])
    }
}

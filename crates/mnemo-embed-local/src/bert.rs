//! A BERT encoder (the architecture of sentence-transformers' MiniLM models) on candle-nn.
//!
//! Only what sentence embedding needs: the forward pass over a batch of unpadded sequences of
//! one length (the embedder batches by length), so no attention mask; token type 0 throughout.
//! Written here rather than taken from candle-transformers: that crate holds every model
//! candle supports and would add many minutes to the build for these ~100 lines.
use candle_core::{Module, Result, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, LayerNormConfig, Linear, VarBuilder};
use serde::Deserialize;

/// The keys of a BERT `config.json` this encoder uses.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: String,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    intermediate: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

/// The encoder.
pub(crate) struct Bert {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

fn norm(size: usize, eps: f64, vb: VarBuilder) -> Result<LayerNorm> {
    layer_norm(size, LayerNormConfig { eps, ..Default::default() }, vb)
}

impl Bert {
    /// Load the weights (named as in Hugging Face BERT checkpoints, with or without `bert.`).
    pub(crate) fn load(vb: VarBuilder, c: &BertConfig) -> Result<Self> {
        if c.hidden_act != "gelu" {
            candle_core::bail!("hidden_act {:?} is not supported (only \"gelu\")", c.hidden_act);
        }
        if c.num_attention_heads == 0 || !c.hidden_size.is_multiple_of(c.num_attention_heads) {
            candle_core::bail!("hidden_size {} is not a multiple of {} heads", c.hidden_size, c.num_attention_heads);
        }
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") { vb } else { vb.pp("bert") };
        let h = c.hidden_size;
        let e = vb.pp("embeddings");
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            layers.push(Layer {
                query: linear(h, h, a.pp("self.query"))?,
                key: linear(h, h, a.pp("self.key"))?,
                value: linear(h, h, a.pp("self.value"))?,
                attn_out: linear(h, h, a.pp("output.dense"))?,
                attn_norm: norm(h, c.layer_norm_eps, a.pp("output.LayerNorm"))?,
                intermediate: linear(h, c.intermediate_size, l.pp("intermediate.dense"))?,
                out: linear(c.intermediate_size, h, l.pp("output.dense"))?,
                out_norm: norm(h, c.layer_norm_eps, l.pp("output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            words: embedding(c.vocab_size, h, e.pp("word_embeddings"))?,
            positions: embedding(c.max_position_embeddings, h, e.pp("position_embeddings"))?,
            token_types: embedding(c.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: norm(h, c.layer_norm_eps, e.pp("LayerNorm"))?,
            layers,
            heads: c.num_attention_heads,
        })
    }

    /// Hidden states (batch, len, hidden) of token ids (batch, len), every position a real token.
    pub(crate) fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?.unsqueeze(0)?;
        let types = ids.zeros_like()?;
        let x = self.words.forward(ids)?.broadcast_add(&self.positions.forward(&positions)?)?;
        let mut x = self.norm.forward(&(x + self.token_types.forward(&types)?)?)?;
        let hidden = x.dim(D::Minus1)?;
        let head = hidden / self.heads;
        let scale = 1.0 / (head as f64).sqrt();
        let split =
            |t: Tensor| -> Result<Tensor> { t.reshape((batch, len, self.heads, head))?.transpose(1, 2)?.contiguous() };
        for l in &self.layers {
            let q = split(l.query.forward(&x)?)?;
            let k = split(l.key.forward(&x)?)?;
            let v = split(l.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((batch, len, hidden))?;
            let a = l.attn_norm.forward(&(l.attn_out.forward(&ctx)? + &x)?)?;
            let i = l.intermediate.forward(&a)?.gelu_erf()?;
            x = l.out_norm.forward(&(l.out.forward(&i)? + a)?)?;
        }
        Ok(x)
    }
}

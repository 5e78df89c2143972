//! Embedding models: the built-in demo embedder, or an OpenAI-compatible
//! `POST {base_url}/embeddings` of a catalogue provider. One request embeds a batch; the
//! answer is checked (one vector per input, each of the configured length) before anything
//! is stored, so a misconfigured model fails its files with a clear error.

use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::demo_embed;
use crate::config::{EmbeddingModelConfig, ProviderConfig, ProviderKind, DEMO_EMBEDDING_MODEL};
use crate::domain::pricing::Price;

/// Longest upstream error text kept (it is shown with the file that failed).
const MAX_ERROR_CHARS: usize = 300;

/// An embedding model ready to use.
pub struct EmbeddingModel {
    pub name: String,
    pub dimensions: usize,
    /// Per million input tokens; `None`: free (no money budget applies).
    pub price: Option<Price>,
    backend: Backend,
}

enum Backend {
    Demo,
    OpenAi {
        client: reqwest::Client,
        url: String,
        upstream: String,
        api_key: Option<SecretString>,
    },
}

/// Vectors, in input order, and the tokens the provider counted.
#[derive(Debug)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub tokens: u64,
}

/// Why a batch was not embedded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    #[error("the embeddings endpoint answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the embeddings endpoint could not be reached: {0}")]
    Network(String),
    #[error("the embeddings endpoint answered something unreadable: {0}")]
    Malformed(String),
    #[error("the embedding model returned vectors of {got} dimensions; {want} are configured")]
    WrongDimensions { got: usize, want: usize },
    #[error("the embeddings endpoint returned {got} vectors for {want} inputs")]
    WrongCount { got: usize, want: usize },
}

impl EmbedError {
    /// Worth trying again later (the endpoint may recover); the others are configuration
    /// errors a retry cannot fix.
    pub fn retryable(&self) -> bool {
        match self {
            EmbedError::Status { status, .. } => *status == 429 || *status >= 500,
            EmbedError::Network(_) | EmbedError::Malformed(_) => true,
            EmbedError::WrongDimensions { .. } | EmbedError::WrongCount { .. } => false,
        }
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
    #[serde(default)]
    usage: Option<EmbeddingsUsage>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct EmbeddingsUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

impl EmbeddingModel {
    /// The model `name` of the catalogue: `demo-embed`, or an `[[embedding_models]]` entry
    /// on one of `providers` (which must speak the OpenAI wire format).
    pub fn build(
        name: &str,
        models: &[EmbeddingModelConfig],
        providers: &[ProviderConfig],
    ) -> Result<Arc<Self>, String> {
        if name == DEMO_EMBEDDING_MODEL {
            return Ok(Arc::new(Self::demo()));
        }
        let model = models
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| format!("embedding model {name} is not configured"))?;
        let provider = providers
            .iter()
            .find(|p| p.name == model.provider)
            .ok_or_else(|| format!("provider {} is not configured", model.provider))?;
        if provider.kind != ProviderKind::Openai {
            return Err(format!(
                "provider {} is not OpenAI-compatible: embeddings need an /embeddings endpoint",
                provider.name
            ));
        }
        let base = if provider.base_url.trim().is_empty() {
            "https://api.openai.com/v1".to_owned()
        } else {
            super::http::normalize_base_url(&provider.base_url).map_err(|e| e.to_string())?
        };
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            name: model.name.clone(),
            dimensions: model.dimensions,
            price: model.price_input.map(|input| Price {
                currency: model.currency.clone(),
                input,
                output: input,
                cache_read: input,
                cache_write: input,
            }),
            backend: Backend::OpenAi {
                client,
                url: format!("{base}/embeddings"),
                upstream: model.upstream().to_owned(),
                api_key: provider.api_key.clone(),
            },
        }))
    }

    /// The built-in offline embedder.
    pub fn demo() -> Self {
        Self {
            name: DEMO_EMBEDDING_MODEL.to_owned(),
            dimensions: demo_embed::DEMO_DIMENSIONS,
            price: None,
            backend: Backend::Demo,
        }
    }

    /// Embeds `inputs` (one request), checking the answer's shape.
    pub async fn embed(&self, inputs: &[String]) -> Result<Embedded, EmbedError> {
        let embedded = match &self.backend {
            Backend::Demo => Embedded {
                vectors: inputs
                    .iter()
                    .map(|t| demo_embed::embed(t, self.dimensions))
                    .collect(),
                tokens: inputs.iter().map(|t| super::estimate_tokens(t)).sum(),
            },
            Backend::OpenAi {
                client,
                url,
                upstream,
                api_key,
            } => {
                let mut request = client.post(url).json(&EmbeddingsRequest {
                    model: upstream,
                    input: inputs,
                    encoding_format: "float",
                });
                if let Some(key) = api_key {
                    request = request.bearer_auth(key.expose_secret());
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| EmbedError::Network(e.without_url().to_string()))?;
                let status = response.status();
                let body = response
                    .text()
                    .await
                    .map_err(|e| EmbedError::Network(e.without_url().to_string()))?;
                if !status.is_success() {
                    let message = super::http::error_message_from_body(&body, status.as_u16());
                    return Err(EmbedError::Status {
                        status: status.as_u16(),
                        message: message.chars().take(MAX_ERROR_CHARS).collect(),
                    });
                }
                parse(&body, inputs)?
            }
        };
        self.check(embedded, inputs.len())
    }

    fn check(&self, embedded: Embedded, inputs: usize) -> Result<Embedded, EmbedError> {
        if embedded.vectors.len() != inputs {
            return Err(EmbedError::WrongCount {
                got: embedded.vectors.len(),
                want: inputs,
            });
        }
        if let Some(v) = embedded.vectors.iter().find(|v| v.len() != self.dimensions) {
            return Err(EmbedError::WrongDimensions {
                got: v.len(),
                want: self.dimensions,
            });
        }
        if embedded.vectors.iter().flatten().any(|x| !x.is_finite()) {
            return Err(EmbedError::Malformed(
                "a vector holds NaN or infinity".into(),
            ));
        }
        Ok(embedded)
    }
}

/// The vectors of an OpenAI `/embeddings` answer, put in input order by `index`.
fn parse(body: &str, inputs: &[String]) -> Result<Embedded, EmbedError> {
    let response: EmbeddingsResponse = serde_json::from_str(body).map_err(|e| {
        EmbedError::Malformed(e.to_string().chars().take(MAX_ERROR_CHARS).collect())
    })?;
    let mut data = response.data;
    if data.iter().all(|d| d.index.is_some()) {
        data.sort_by_key(|d| d.index);
    }
    let tokens = response
        .usage
        .map(|u| u.prompt_tokens.max(u.total_tokens))
        .filter(|t| *t > 0)
        .unwrap_or_else(|| inputs.iter().map(|t| super::estimate_tokens(t)).sum());
    Ok(Embedded {
        vectors: data.into_iter().map(|d| d.embedding).collect(),
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_put_in_input_order_and_checked() {
        let inputs = vec!["a".to_owned(), "b".to_owned()];
        let body = r#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],
                       "usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        let e = parse(body, &inputs).unwrap();
        assert_eq!(e.vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(e.tokens, 7);
        let mut m = EmbeddingModel::demo();
        m.dimensions = 3;
        let err = m.check(e, 2).unwrap_err();
        assert!(
            matches!(err, EmbedError::WrongDimensions { got: 2, want: 3 }),
            "{err}"
        );
        assert!(!err.retryable());
        assert!(parse("not json", &inputs).is_err());
    }

    #[tokio::test]
    async fn the_demo_embedder_needs_no_upstream() {
        let m = EmbeddingModel::demo();
        let e = m.embed(&["refund policy".to_owned()]).await.unwrap();
        assert_eq!(e.vectors[0].len(), demo_embed::DEMO_DIMENSIONS);
        assert!(e.tokens > 0);
    }
}

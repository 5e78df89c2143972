//! The environment variables of the optional features' settings: knowledge collections, the
//! code interpreter's sandbox, users' memory, web search, shared links, single sign-on and
//! SCIM, and image uploads. Kept apart from the server's own ([`super::env`], which reads
//! both) so that neither table grows past a readable length.

use super::env::{list, var, EnvVar};

/// The optional features' settings' variables.
pub(super) const FEATURES: &[EnvVar] = &[
    var("AGENTCHAT_KNOWLEDGE_ENABLED", "knowledge.enabled"),
    var(
        "AGENTCHAT_KNOWLEDGE_EMBEDDING_MODEL",
        "knowledge.embedding_model",
    ),
    var("AGENTCHAT_KNOWLEDGE_CHUNK_TOKENS", "knowledge.chunk_tokens"),
    var(
        "AGENTCHAT_KNOWLEDGE_CHUNK_OVERLAP_TOKENS",
        "knowledge.chunk_overlap_tokens",
    ),
    var("AGENTCHAT_KNOWLEDGE_EMBED_BATCH", "knowledge.embed_batch"),
    var("AGENTCHAT_KNOWLEDGE_WORKERS", "knowledge.workers"),
    var("AGENTCHAT_SANDBOX_ENABLED", "sandbox.enabled"),
    var("AGENTCHAT_SANDBOX_BWRAP", "sandbox.bwrap"),
    var("AGENTCHAT_SANDBOX_PYTHON", "sandbox.python"),
    var("AGENTCHAT_SANDBOX_TIMEOUT_SECS", "sandbox.timeout_secs"),
    var("AGENTCHAT_SANDBOX_MEMORY_MB", "sandbox.memory_mb"),
    var("AGENTCHAT_SANDBOX_MAX_PROCESSES", "sandbox.max_processes"),
    var("AGENTCHAT_SANDBOX_TMP_MB", "sandbox.tmp_mb"),
    var("AGENTCHAT_SANDBOX_DATA_MB", "sandbox.data_mb"),
    var(
        "AGENTCHAT_SANDBOX_MAX_OUTPUT_BYTES",
        "sandbox.max_output_bytes",
    ),
    var("AGENTCHAT_SANDBOX_MAX_FILES", "sandbox.max_files"),
    var("AGENTCHAT_SANDBOX_MAX_FILE_BYTES", "sandbox.max_file_bytes"),
    var("AGENTCHAT_SANDBOX_MAX_CONCURRENT", "sandbox.max_concurrent"),
    var(
        "AGENTCHAT_SANDBOX_MAX_CONCURRENT_PER_USER",
        "sandbox.max_concurrent_per_user",
    ),
    var(
        "AGENTCHAT_SANDBOX_PRICE_PER_CPU_HOUR",
        "sandbox.price_per_cpu_hour",
    ),
    var("AGENTCHAT_SANDBOX_CURRENCY", "sandbox.currency"),
    var("AGENTCHAT_MEMORY_MAX_NOTES", "memory.max_notes"),
    var(
        "AGENTCHAT_SEARCH_STRIP_PERSONAL_DATA",
        "search.strip_personal_data",
    ),
    var(
        "AGENTCHAT_SEARCH_QUERIES_PER_USER_PER_DAY",
        "search.queries_per_user_per_day",
    ),
    var(
        "AGENTCHAT_SEARCH_MAX_RESPONSE_BYTES",
        "search.max_response_bytes",
    ),
    var(
        "AGENTCHAT_SEARCH_BREAKER_FAILURES",
        "search.breaker_failures",
    ),
    var(
        "AGENTCHAT_SEARCH_BREAKER_COOLDOWN_SECS",
        "search.breaker_cooldown_secs",
    ),
    var("AGENTCHAT_MEMORY_MAX_NOTE_CHARS", "memory.max_note_chars"),
    var(
        "AGENTCHAT_MEMORY_MAX_TOTAL_TOKENS",
        "memory.max_total_tokens",
    ),
    var(
        "AGENTCHAT_SHARE_READS_PER_MINUTE_PER_ADDRESS",
        "sharing.reads_per_minute_per_address",
    ),
    var(
        "AGENTCHAT_SHARE_READS_PER_MINUTE_PER_LINK",
        "sharing.reads_per_minute_per_link",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_MAX_TEXT_BYTES",
        "knowledge.max_text_bytes",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_MAX_FILES_PER_COLLECTION",
        "knowledge.max_files_per_collection",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_MAX_COLLECTIONS_PER_USER",
        "knowledge.max_collections_per_user",
    ),
    var("AGENTCHAT_KNOWLEDGE_MAX_ATTEMPTS", "knowledge.max_attempts"),
    var(
        "AGENTCHAT_KNOWLEDGE_JOB_TIMEOUT_SECS",
        "knowledge.job_timeout_secs",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_USER_QUOTA_BYTES",
        "knowledge.user_quota_bytes",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_MIN_SIMILARITY",
        "knowledge.min_similarity",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_MAX_FILE_BYTES",
        "knowledge.max_file_bytes",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_EXTRACT_TIMEOUT_SECS",
        "knowledge.extract_timeout_secs",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_EXTRACT_CPU_SECS",
        "knowledge.extract_cpu_secs",
    ),
    var(
        "AGENTCHAT_KNOWLEDGE_EXTRACT_MEMORY_MB",
        "knowledge.extract_memory_mb",
    ),
    var("AGENTCHAT_KNOWLEDGE_EXTRACTOR", "knowledge.extractor"),
    var("AGENTCHAT_OIDC_ISSUER", "oidc.issuer"),
    var("AGENTCHAT_OIDC_CLIENT_ID", "oidc.client_id"),
    var("AGENTCHAT_OIDC_CLIENT_SECRET", "oidc.client_secret"),
    var("AGENTCHAT_OIDC_REDIRECT_URL", "oidc.redirect_url"),
    list("AGENTCHAT_OIDC_SCOPES", "oidc.scopes"),
    var("AGENTCHAT_OIDC_GROUPS_CLAIM", "oidc.groups_claim"),
    list("AGENTCHAT_OIDC_ROLE_MAP", "oidc.role_map"),
    var("AGENTCHAT_OIDC_DEFAULT_ROLE", "oidc.default_role"),
    var("AGENTCHAT_OIDC_REQUIRE_GROUP", "oidc.require_group"),
    var("AGENTCHAT_OIDC_DISPLAY_NAME", "oidc.display_name"),
    var(
        "AGENTCHAT_OIDC_JWKS_MIN_REFETCH_SECS",
        "oidc.jwks_min_refetch_secs",
    ),
    var("AGENTCHAT_PASSWORD_LOGIN", "oidc.password_login"),
    var("AGENTCHAT_SCIM_TOKEN", "scim.token"),
    var("AGENTCHAT_IMAGE_MAX_PIXELS", "images.max_pixels"),
    var("AGENTCHAT_IMAGE_MAX_SIDE_PX", "images.max_side_px"),
    var("AGENTCHAT_IMAGE_RESIZE_TO_PX", "images.resize_to_px"),
    var(
        "AGENTCHAT_IMAGE_DECODE_MEMORY_MB",
        "images.decode_memory_mb",
    ),
    var(
        "AGENTCHAT_IMAGE_CONCURRENT_DECODES",
        "images.concurrent_decodes",
    ),
];

#[cfg(test)]
#[path = "env_features_tests.rs"]
mod tests;

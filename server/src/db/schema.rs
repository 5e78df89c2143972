// @generated-style diesel schema; keep in sync with migrations/ (the API test
// `schema_drift` compares it with a migrated database and fails when they differ).

/// SQL types Diesel does not ship.
pub mod sql_types {
    /// pgvector's `vector`: `chunks.embedding`, which knowledge's start-up step adds when the
    /// database has pgvector (server/src/knowledge/schema.rs); read and written only by the
    /// raw SQL of `knowledge/`, as Diesel has no operators for it.
    #[derive(diesel::query_builder::QueryId, diesel::sql_types::SqlType)]
    #[diesel(postgres_type(name = "vector"))]
    pub struct Vector;

    /// Full-text search's `tsvector`: generated columns (`messages.search_vector`,
    /// `chunks.tsv`), never written, matched by raw SQL.
    #[derive(diesel::query_builder::QueryId, diesel::sql_types::SqlType)]
    #[diesel(postgres_type(name = "tsvector"))]
    pub struct Tsvector;
}

diesel::table! {
    server_secrets (name) {
        name -> Text,
        value -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    roles (name) {
        name -> Text,
        tools -> Array<Text>,
        token_budget -> Nullable<Int8>,
        budget_period -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        approvals -> Jsonb,
        models -> Array<Text>,
        budget_amount -> Nullable<Numeric>,
        budget_currency -> Nullable<Text>,
        can_share_public -> Bool,
    }
}

diesel::table! {
    users (id) {
        id -> Uuid,
        username -> Text,
        password_hash -> Text,
        role -> Text,
        disabled -> Bool,
        token_version -> Int4,
        token_budget -> Nullable<Int8>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        source -> Text,
        theme -> Text,
        default_model -> Nullable<Text>,
        memory_enabled -> Bool,
    }
}

diesel::table! {
    refresh_tokens (id) {
        id -> Uuid,
        user_id -> Uuid,
        family_id -> Uuid,
        token_hash -> Bytea,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    conversations (id) {
        id -> Uuid,
        user_id -> Uuid,
        title -> Text,
        model -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        active_turn_id -> Nullable<Uuid>,
        active_turn_at -> Nullable<Timestamptz>,
        active_process_id -> Nullable<Uuid>,
        pinned -> Bool,
        archived_at -> Nullable<Timestamptz>,
        system_prompt -> Nullable<Text>,
        title_auto -> Bool,
        key_scopes -> Nullable<Array<Text>>,
        assistant_id -> Nullable<Uuid>,
        memory_enabled -> Bool,
        forked_from -> Nullable<Uuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use super::sql_types::Tsvector;

    messages (id) {
        id -> Uuid,
        seq -> Int8,
        conversation_id -> Uuid,
        role -> Text,
        content -> Text,
        tool_calls -> Nullable<Jsonb>,
        tool_call_id -> Nullable<Text>,
        status -> Text,
        status_reason -> Nullable<Text>,
        model -> Nullable<Text>,
        input_tokens -> Nullable<Int8>,
        output_tokens -> Nullable<Int8>,
        duration_ms -> Nullable<Int8>,
        created_at -> Timestamptz,
        history_cost -> Nullable<Int4>,
        attachments -> Nullable<Jsonb>,
        citations -> Nullable<Jsonb>,
        search_vector -> Nullable<Tsvector>,
    }
}

diesel::joinable!(users -> roles (role));
diesel::joinable!(refresh_tokens -> users (user_id));
diesel::joinable!(conversations -> users (user_id));
diesel::joinable!(messages -> conversations (conversation_id));

diesel::table! {
    budget_periods (user_id, period, period_start) {
        user_id -> Uuid,
        period -> Text,
        period_start -> Timestamptz,
        spent -> Int8,
        reserved -> Int8,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    budget_holds (id) {
        id -> Uuid,
        user_id -> Uuid,
        period -> Text,
        period_start -> Timestamptz,
        amount -> Int8,
        expires_at -> Timestamptz,
        process_id -> Nullable<Uuid>,
        turn_id -> Nullable<Uuid>,
        conversation_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    idempotency_keys (user_id, key) {
        user_id -> Uuid,
        key -> Text,
        request_hash -> Bytea,
        conversation_id -> Uuid,
        turn_id -> Uuid,
        user_message_id -> Uuid,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    server_processes (id) {
        id -> Uuid,
        started_at -> Timestamptz,
        heartbeat_at -> Timestamptz,
    }
}

diesel::table! {
    usage_records (id) {
        id -> Int8,
        user_id -> Uuid,
        conversation_id -> Nullable<Uuid>,
        message_id -> Nullable<Uuid>,
        model -> Text,
        input_tokens -> Int8,
        output_tokens -> Int8,
        charged -> Int8,
        created_at -> Timestamptz,
        cache_read_tokens -> Int8,
        cache_write_tokens -> Int8,
        cost -> Nullable<Numeric>,
        currency -> Nullable<Text>,
        fallback_from -> Nullable<Text>,
        fallback_reason -> Nullable<Text>,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Int8,
        created_at -> Timestamptz,
        user_id -> Nullable<Uuid>,
        username -> Text,
        conversation_id -> Nullable<Uuid>,
        tool -> Text,
        tool_call_id -> Text,
        arguments -> Jsonb,
        arguments_truncated -> Bool,
        outcome -> Text,
        error -> Nullable<Text>,
        duration_ms -> Int8,
        result_bytes -> Int8,
        trace_id -> Nullable<Text>,
        span_id -> Nullable<Text>,
        approval_policy -> Nullable<Text>,
        approval_decision -> Nullable<Text>,
        approval_decided_by -> Nullable<Text>,
        approval_note -> Nullable<Text>,
        approval_decided_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    custom_tools (name) {
        name -> Text,
        description -> Text,
        parameters -> Jsonb,
        method -> Text,
        url_template -> Text,
        headers -> Jsonb,
        timeout_ms -> Int8,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    mcp_servers (name) {
        name -> Text,
        url -> Text,
        headers -> Jsonb,
        enabled -> Bool,
        timeout_ms -> Int8,
        forward_identity -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    approvals (id) {
        id -> Uuid,
        conversation_id -> Uuid,
        user_id -> Uuid,
        username -> Text,
        turn_id -> Uuid,
        message_id -> Uuid,
        tool_call_id -> Text,
        tool -> Text,
        server -> Nullable<Text>,
        arguments -> Jsonb,
        approver -> Text,
        state -> Text,
        decided_by -> Nullable<Uuid>,
        decided_by_name -> Nullable<Text>,
        note -> Nullable<Text>,
        decided_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        resumed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    user_identities (issuer, subject) {
        issuer -> Text,
        subject -> Text,
        user_id -> Uuid,
        created_at -> Timestamptz,
        last_login_at -> Timestamptz,
    }
}

diesel::table! {
    scim_users (user_id) {
        user_id -> Uuid,
        user_name -> Text,
        external_id -> Nullable<Text>,
        display_name -> Nullable<Text>,
        given_name -> Nullable<Text>,
        family_name -> Nullable<Text>,
        email -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    scim_groups (id) {
        id -> Uuid,
        display_name -> Text,
        external_id -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    scim_group_members (group_id, user_id) {
        group_id -> Uuid,
        user_id -> Uuid,
    }
}

diesel::joinable!(scim_users -> users (user_id));
diesel::joinable!(scim_group_members -> scim_groups (group_id));

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        user_id -> Uuid,
        name -> Text,
        prefix -> Text,
        secret_hash -> Bytea,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
        scopes -> Array<Text>,
    }
}

diesel::joinable!(api_keys -> users (user_id));

diesel::table! {
    admin_changes (id) {
        id -> Int8,
        created_at -> Timestamptz,
        actor_id -> Nullable<Uuid>,
        actor_name -> Text,
        kind -> Text,
        target -> Text,
        target_id -> Nullable<Uuid>,
        before -> Nullable<Jsonb>,
        after -> Nullable<Jsonb>,
    }
}

diesel::table! {
    deleted_users (id) {
        id -> Uuid,
        username -> Text,
        deleted_at -> Timestamptz,
        deleted_by -> Nullable<Uuid>,
    }
}

diesel::table! {
    provider_breakers (provider) {
        provider -> Text,
        open_until -> Nullable<Timestamptz>,
        reason -> Nullable<Text>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    catalogue_entries (kind, name) {
        kind -> Text,
        name -> Text,
        spec -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    collections (id) {
        id -> Uuid,
        owner_id -> Uuid,
        name -> Text,
        description -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    collection_grants (collection_id, role) {
        collection_id -> Uuid,
        role -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    conversation_collections (conversation_id, collection_id) {
        conversation_id -> Uuid,
        collection_id -> Uuid,
    }
}

diesel::table! {
    turn_ends (turn_id) {
        turn_id -> Uuid,
        conversation_id -> Uuid,
        event -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    money_periods (user_id, period, period_start, currency) {
        user_id -> Uuid,
        period -> Text,
        period_start -> Timestamptz,
        currency -> Text,
        spent -> Numeric,
        reserved -> Numeric,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    money_holds (id) {
        id -> Uuid,
        user_id -> Uuid,
        period -> Text,
        period_start -> Timestamptz,
        currency -> Text,
        amount -> Numeric,
        expires_at -> Timestamptz,
        process_id -> Nullable<Uuid>,
        turn_id -> Nullable<Uuid>,
        conversation_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    documents (id) {
        id -> Uuid,
        collection_id -> Uuid,
        name -> Text,
        source -> Text,
        workspace_path -> Nullable<Text>,
        uploaded_by -> Uuid,
        content -> Bytea,
        content_sha256 -> Text,
        bytes -> Int8,
        text -> Nullable<Text>,
        state -> Text,
        progress -> Float4,
        error -> Nullable<Text>,
        error_code -> Nullable<Text>,
        generation -> Int4,
        live_generation -> Nullable<Int4>,
        chunk_count -> Int4,
        embedding_model -> Nullable<Text>,
        target_model -> Text,
        lease_owner -> Nullable<Uuid>,
        lease_until -> Nullable<Timestamptz>,
        attempts -> Int4,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        claimed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use super::sql_types::{Tsvector, Vector};

    chunks (id) {
        id -> Int8,
        document_id -> Uuid,
        collection_id -> Uuid,
        generation -> Int4,
        ord -> Int4,
        byte_start -> Int4,
        byte_end -> Int4,
        text -> Text,
        tsv -> Nullable<Tsvector>,
        embedding_model -> Text,
        dims -> Nullable<Int4>,
        embedding -> Nullable<Vector>,
    }
}

diesel::table! {
    assistants (id) {
        id -> Uuid,
        name -> Text,
        version -> Int4,
        created_by -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        retired_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    assistant_versions (assistant_id, version) {
        assistant_id -> Uuid,
        version -> Int4,
        name -> Text,
        description -> Text,
        instructions -> Text,
        model -> Nullable<Text>,
        tools -> Array<Text>,
        collections -> Array<Uuid>,
        params -> Jsonb,
        visible_to_roles -> Array<Text>,
        created_by -> Nullable<Uuid>,
        created_by_name -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    memory_notes (id) {
        id -> Uuid,
        user_id -> Uuid,
        text -> Text,
        source -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    conversation_shares (id) {
        id -> Text,
        conversation_id -> Uuid,
        owner_id -> Uuid,
        scope -> Text,
        redact_tools -> Bool,
        snapshot_seq -> Int8,
        expires_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    share_views (id) {
        id -> Int8,
        share_id -> Text,
        viewer_id -> Nullable<Uuid>,
        viewer_address -> Nullable<Text>,
        action -> Text,
        file -> Nullable<Text>,
        viewed_at -> Timestamptz,
        minute -> Timestamptz,
        views -> Int8,
        viewer_key -> Text,
    }
}

// Foreign keys Diesel can join on (one per pair of tables; a composite key such as
// money_holds → money_periods, and a table's key to itself such as
// conversations.forked_from, cannot be said here).
diesel::joinable!(budget_periods -> users (user_id));
diesel::joinable!(idempotency_keys -> users (user_id));
diesel::joinable!(usage_records -> users (user_id));
diesel::joinable!(approvals -> conversations (conversation_id));
diesel::joinable!(user_identities -> users (user_id));
diesel::joinable!(turn_ends -> conversations (conversation_id));
diesel::joinable!(money_periods -> users (user_id));
diesel::joinable!(collections -> users (owner_id));
diesel::joinable!(collection_grants -> collections (collection_id));
diesel::joinable!(collection_grants -> roles (role));
diesel::joinable!(conversation_collections -> conversations (conversation_id));
diesel::joinable!(conversation_collections -> collections (collection_id));
diesel::joinable!(documents -> collections (collection_id));
diesel::joinable!(chunks -> documents (document_id));
diesel::joinable!(chunks -> collections (collection_id));
diesel::joinable!(conversations -> assistants (assistant_id));
diesel::joinable!(assistant_versions -> assistants (assistant_id));
diesel::joinable!(memory_notes -> users (user_id));
diesel::joinable!(conversation_shares -> conversations (conversation_id));

diesel::allow_tables_to_appear_in_same_query!(
    server_secrets,
    roles,
    users,
    refresh_tokens,
    conversations,
    messages,
    budget_periods,
    budget_holds,
    idempotency_keys,
    server_processes,
    usage_records,
    audit_log,
    custom_tools,
    mcp_servers,
    approvals,
    user_identities,
    scim_users,
    scim_groups,
    scim_group_members,
    api_keys,
    admin_changes,
    deleted_users,
    provider_breakers,
    catalogue_entries,
    collections,
    collection_grants,
    conversation_collections,
    turn_ends,
    money_periods,
    money_holds,
    documents,
    chunks,
    assistants,
    assistant_versions,
    memory_notes,
    conversation_shares,
    share_views,
    sandbox_runs,
    search_providers,
    role_search,
    role_sandbox,
    web_search_queries,
    web_search_results,
);

diesel::table! {
    sandbox_runs (id) {
        id -> Int8,
        created_at -> Timestamptz,
        user_id -> Nullable<Uuid>,
        username -> Text,
        conversation_id -> Nullable<Uuid>,
        code -> Text,
        code_sha256 -> Text,
        inputs -> Jsonb,
        outputs -> Jsonb,
        skipped -> Jsonb,
        outcome -> Text,
        error -> Nullable<Text>,
        exit_code -> Nullable<Int4>,
        timed_out -> Bool,
        limit_hit -> Nullable<Text>,
        duration_ms -> Int8,
        cpu_ms -> Int8,
        max_rss_bytes -> Int8,
        queue_wait_ms -> Int8,
        isolation -> Text,
        cost -> Nullable<Numeric>,
        currency -> Nullable<Text>,
    }
}

diesel::table! {
    search_providers (name) {
        name -> Text,
        kind -> Text,
        base_url -> Text,
        api_key -> Nullable<Text>,
        api_key_sealed -> Nullable<Text>,
        price_per_query -> Numeric,
        currency -> Text,
        timeout_secs -> Int4,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    role_sandbox (role) {
        role -> Text,
        timeout_secs -> Nullable<Int4>,
        memory_mb -> Nullable<Int4>,
        max_processes -> Nullable<Int4>,
        max_output_bytes -> Nullable<Int4>,
        max_files -> Nullable<Int4>,
        max_file_bytes -> Nullable<Int8>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    role_search (role) {
        role -> Text,
        providers -> Array<Text>,
        allow_domains -> Array<Text>,
        deny_domains -> Array<Text>,
        queries_per_day -> Nullable<Int4>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    web_search_queries (id) {
        id -> Int8,
        user_id -> Uuid,
        conversation_id -> Nullable<Uuid>,
        provider -> Text,
        query_sent -> Text,
        stripped -> Bool,
        outcome -> Text,
        error -> Nullable<Text>,
        result_urls -> Array<Text>,
        cost -> Numeric,
        currency -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    web_search_results (id) {
        id -> Int8,
        query_id -> Int8,
        user_id -> Uuid,
        url -> Text,
        title -> Text,
        snippet -> Text,
        published -> Nullable<Text>,
        provider -> Text,
    }
}

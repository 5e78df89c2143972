// @generated-style diesel schema; keep in sync with migrations/.

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
    }
}

diesel::table! {
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
    }
}

diesel::joinable!(users -> roles (role));
diesel::joinable!(refresh_tokens -> users (user_id));
diesel::joinable!(conversations -> users (user_id));
diesel::joinable!(messages -> conversations (conversation_id));

diesel::allow_tables_to_appear_in_same_query!(
    server_secrets,
    roles,
    users,
    refresh_tokens,
    conversations,
    messages,
);

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
    }
}

diesel::allow_tables_to_appear_in_same_query!(users, usage_records);

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
    api_keys (id) {
        id -> Uuid,
        user_id -> Uuid,
        name -> Text,
        prefix -> Text,
        secret_hash -> Bytea,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
    }
}

diesel::joinable!(api_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(api_keys, users);

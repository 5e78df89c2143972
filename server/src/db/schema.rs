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
        approvals -> Jsonb,
        models -> Array<Text>,
        budget_amount -> Nullable<Numeric>,
        budget_currency -> Nullable<Text>,
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
        turn_id -> Nullable<Uuid>,
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
diesel::allow_tables_to_appear_in_same_query!(
    users,
    scim_users,
    scim_groups,
    scim_group_members,
    user_identities
);

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
diesel::allow_tables_to_appear_in_same_query!(api_keys, users);

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

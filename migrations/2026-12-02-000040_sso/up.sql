-- Single sign-on and SCIM provisioning. `users.source` says where an account comes from:
-- `password` (registered or made by an admin), `sso` (created at its first OpenID Connect
-- sign-in), `scim` (provisioned by the identity provider). Accounts from outside have no
-- usable local password.
ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'password'
    CHECK (source IN ('password', 'sso', 'scim'));

-- An account is found by the provider's (issuer, subject), never by e-mail.
CREATE TABLE user_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_login_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

-- What the identity provider said about an account it provisioned (SCIM `User`).
CREATE TABLE scim_users (
    user_id UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    external_id TEXT,
    display_name TEXT,
    given_name TEXT,
    family_name TEXT,
    email TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (lower(user_name));
CREATE INDEX scim_users_external_id ON scim_users (external_id);

-- Groups pushed by the identity provider (SCIM `Group`) and their members.
CREATE TABLE scim_groups (
    id UUID PRIMARY KEY,
    display_name TEXT NOT NULL,
    external_id TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (lower(display_name));

CREATE TABLE scim_group_members (
    group_id UUID NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    user_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (user_id);

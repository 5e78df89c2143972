DELETE FROM usage_records r WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = r.user_id);
ALTER TABLE usage_records
    ADD CONSTRAINT usage_records_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
DROP TABLE deleted_users;
DROP TABLE admin_changes;

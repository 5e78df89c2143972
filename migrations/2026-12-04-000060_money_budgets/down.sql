DROP TABLE money_holds;
DROP TABLE money_periods;
ALTER TABLE roles DROP CONSTRAINT roles_budget_money_pair,
    DROP COLUMN budget_currency,
    DROP COLUMN budget_amount;

DROP TABLE usage_records;
DROP TABLE budget_holds;
DROP TABLE budget_periods;

DROP TABLE web_search_results;
DROP TABLE web_search_queries;
DROP TABLE role_search;
DROP TABLE search_providers;

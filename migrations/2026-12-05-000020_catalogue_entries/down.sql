DROP TABLE catalogue_entries;

DROP TABLE turn_ends;

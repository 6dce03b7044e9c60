-- Run once on the shared PostgreSQL as a superuser: psql -v password="'SECRET'" -f postgres-setup.sql
-- citeline connects as this role; it owns its database and needs no other privilege.
CREATE ROLE citeline LOGIN PASSWORD :password;
CREATE DATABASE citeline OWNER citeline;
\connect citeline
-- pgvector is not a trusted extension: the superuser installs it, citeline's migrations then find it.
CREATE EXTENSION IF NOT EXISTS vector;

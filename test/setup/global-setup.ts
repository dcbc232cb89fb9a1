/**
 * Creates a fresh database for this test run on TEST_DATABASE_URL's server (default: the local
 * PostgreSQL on 127.0.0.1:5432), applies the migrations, exposes it as DATABASE_URL, and drops it at
 * the end. Tests talk to a real PostgreSQL; nothing is mocked. Also builds the console when the build
 * is missing or older than the sources, for the end-to-end tests.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrate } from "@/lib/db/migrate";
import { buildIfNeeded } from "@/lib/server/build";

const SERVER_URL = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export default async function setup(project: TestProject) {
  // The end-to-end tests serve the production build: make it current once, before any test file runs
  // (two files building at once would fight over .next). KEYWARD_TEST_NO_BUILD=1 skips it for a run of
  // tests that serve nothing through Next (the build is slow on a busy machine; a stale build serves old code).
  if (!process.env.KEYWARD_TEST_NO_BUILD) buildIfNeeded();
  const name = `keyward_test_${Date.now()}_${randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);
  process.env.DATABASE_URL = databaseUrl;
  project.provide("databaseUrl", databaseUrl);
  project.provide("serverUrl", SERVER_URL);

  return async () => {
    if (process.env.KEYWARD_KEEP_TEST_DB) return;
    const c = new pg.Client({ connectionString: SERVER_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.end();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    serverUrl: string;
  }
}

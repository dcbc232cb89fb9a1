import { afterAll } from "vitest";
import { closeDb } from "@/lib/db/client";
import "./db";

afterAll(async () => {
  await closeDb();
});

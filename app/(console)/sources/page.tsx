import type { Metadata } from "next";
import { SourcesPage } from "@/components/sources/SourcesPage";

export const metadata: Metadata = { title: "Sources" };

/** Every signed-in role reads sources; the screen offers each role only its actions (the API checks again). */
export default function Page() {
  return <SourcesPage />;
}

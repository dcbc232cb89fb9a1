import type { Metadata } from "next";
import { DeadLetterPage } from "@/components/deadletters/DeadLetterPage";
import { requireUser } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Dead letter" };

/** /dead-letters/{id}: one dead letter's payload, error and replay attempts. Every signed-in role. */
export default async function Page({ params }: { params: Promise<{ id: string }> }) {
  await requireUser();
  const { id } = await params;
  return <DeadLetterPage id={id} />;
}

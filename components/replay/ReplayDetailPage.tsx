"use client";

import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { CopyLinkButton } from "@/components/ui/CopyLinkButton";
import { useCan } from "@/components/auth/SessionProvider";
import { PageHeader } from "@/components/ui/PageHeader";
import type { Preflight } from "@/lib/replay/schema";
import { ReplayProgress } from "./ReplayProgress";
import { ReplayWizard } from "./ReplayWizard";

/** One replay on a page of its own (/replays/{id}); "Retry failed items" opens the wizard here. */
export function ReplayDetailPage({ replayId }: { replayId: string }) {
  const canOperate = useCan("operator");
  const router = useRouter();
  const [retry, setRetry] = useState<{ preflight: Preflight; n: number } | null>(null);
  return (
    <>
      <PageHeader
        title="Replay"
        description={<>Progress, outcome and results of one replay. <Link href="/replay">All dead letters and replays</Link></>}
        aside={<CopyLinkButton path={`/replays/${replayId}`} label="Copy link to this replay" />}
      />
      {canOperate && retry && (
        <ReplayWizard
          key={retry.n}
          selection={{ kind: "ids", source: retry.preflight.source, ids: retry.preflight.items.map((i) => i.deadLetterId) }}
          initial={retry.preflight}
          onClose={() => setRetry(null)}
          // The retry is a new replay: the page moves to its URL.
          onStarted={(id) => router.push(`/replays/${id}`)}
        />
      )}
      <ReplayProgress replayId={replayId} onRetry={canOperate ? (preflight) => setRetry((r) => ({ preflight, n: (r?.n ?? 0) + 1 })) : undefined} />
    </>
  );
}

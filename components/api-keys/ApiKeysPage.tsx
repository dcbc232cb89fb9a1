"use client";

import { useState } from "react";
import { PageHeader } from "@/components/ui/PageHeader";
import { SecretPanel } from "@/components/ui/SecretPanel";
import { ApiKeysDataTable } from "./ApiKeysDataTable";
import { CreateApiKeyForm } from "./CreateApiKeyForm";
import textStyles from "@/components/ui/text.module.css";

export function ApiKeysPage() {
  // The new key is held here only, never in the query cache: a reload, or "hide it", and it is gone.
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys for services and scripts, sent as Authorization: Bearer <key>. Keyward stores only a hash of each."
      />
      {created && (
        <SecretPanel title={`New API key ${created.name}`} secret={created.key} stored="hash" onDismiss={() => setCreated(null)}>
          <p>
            Put it in the service&apos;s secret store, e.g. as <code>KEYWARD_API_KEY</code>. Lost keys are not recovered:
            revoke it and create another.
          </p>
        </SecretPanel>
      )}
      <CreateApiKeyForm onCreated={(name, key) => setCreated({ name, key })} />
      <h2 className={textStyles.sectionTitle}>All keys</h2>
      <ApiKeysDataTable />
    </>
  );
}

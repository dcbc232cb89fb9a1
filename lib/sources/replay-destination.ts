/**
 * How a source's replay destination is stored. An http(s) URL carries no credentials and is kept as is.
 * A broker's URL (amqp(s), bullmq(s), nats) carries the broker's user and password: it is kept whole, encrypted like the signing
 * secrets (lib/sources/signing-secret.ts: AES-256-GCM under a key derived from the auth secret), in
 * `replay_destination_enc`, and `replay_destination`, which every reader of sources sees, holds it with
 * the password masked. The password is never shown again; to change it, set the whole URL anew.
 * replayTarget (signing-secret.ts) decrypts it for the executor.
 */
import { authSecret } from "@/lib/auth/auth";
import { isBrokerUrl, maskServiceUrl } from "@/lib/inlets/service-url";
import { encryptSecret } from "./signing-secret";

/** The two columns for a (validated) destination, or null to clear it. */
export async function destinationColumns(url: string | null): Promise<{ replayDestination: string | null; replayDestinationEnc: string | null }> {
  if (url === null || !isBrokerUrl(url)) return { replayDestination: url, replayDestinationEnc: null };
  return { replayDestination: maskServiceUrl(url), replayDestinationEnc: encryptSecret(url, await authSecret()) };
}

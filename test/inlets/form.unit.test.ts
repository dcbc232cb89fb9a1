/** components/sources/inlet-form.ts: the Sources screen's inlet form → the POST body, or the field at fault. Pure. */
import { describe, expect, it } from "vitest";
import { EMPTY_INLET_FORM, inletBody } from "@/components/sources/inlet-form";

describe("inletBody", () => {
  it("trims and converts a valid form", () => {
    expect(inletBody({ amqpUrl: " amqp://u:p@rabbit/prod ", queue: " orders.dlq ", eventIdFrom: "header:x-id", prefetch: "20" })).toEqual({
      ok: true,
      body: { amqpUrl: "amqp://u:p@rabbit/prod", queue: "orders.dlq", eventIdFrom: "header:x-id", prefetch: 20 },
    });
  });

  it("names the first wrong field", () => {
    expect(inletBody(EMPTY_INLET_FORM)).toMatchObject({ ok: false, field: "amqpUrl", error: "AMQP URL is required" });
    expect(inletBody({ ...EMPTY_INLET_FORM, amqpUrl: "amqp://u:***@h/" })).toMatchObject({ field: "amqpUrl", error: expect.stringMatching(/masked password/) });
    expect(inletBody({ ...EMPTY_INLET_FORM, amqpUrl: "amqp://h/" })).toMatchObject({ field: "queue" });
    expect(inletBody({ ...EMPTY_INLET_FORM, amqpUrl: "amqp://h/", queue: "q", eventIdFrom: "id" })).toMatchObject({ field: "eventIdFrom" });
    expect(inletBody({ ...EMPTY_INLET_FORM, amqpUrl: "amqp://h/", queue: "q", prefetch: "0" })).toMatchObject({ field: "prefetch" });
    expect(inletBody({ ...EMPTY_INLET_FORM, amqpUrl: "amqp://h/", queue: "q", prefetch: "1.5" })).toMatchObject({ field: "prefetch" });
  });
});

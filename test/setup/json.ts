/**
 * A JSON value a test received (a response body, an audit row's detail): the test's expect() calls check its
 * shape, so its type stays open. The one `any` of the tests, named.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- checked by expect(), not by the type system
export type Json = any;

#!/usr/bin/env node
// cosmos-shim: @vercel/cosmosdb-server 1.0.1 behind a project-owned HTTP
// front end that makes it behave like the Cosmos DB gateway as far as the Go
// SDK (azcosmos v1.5.0) can observe. README.md explains every patch and why.
//
// Usage:
//   PORT=0 PORT_FILE=/tmp/cosmos-shim.port node shim.js
//
// Environment:
//   PORT                 port to listen on (default 8081; 0 picks a free one)
//   HOST                 address to listen on (default 127.0.0.1)
//   PORT_FILE            if set, the chosen port is written there once listening
//   TLS=1                serve HTTPS with the package's (expired) self-signed cert
//   COSMOS_SHIM_KEY      master key whose HMAC signatures are accepted
//                        (default: the well-known emulator key)
//   COSMOS_SHIM_NO_AUTH=1  accept any request without checking its signature
//   COSMOS_SHIM_LENIENT=1  answer cross-partition ORDER BY/TOP/aggregates/...
//                        instead of rejecting them like the real gateway
//
// The upstream package is used for its data model (account, databases,
// containers, documents), its document/patch operations, its SQL engine and
// all routes this file does not take over. This file owns the HTTP server,
// authentication, request limits, validation and the document routes.

"use strict";

const crypto = require("crypto");
const fs = require("fs");
const http = require("http");
const https = require("https");
const path = require("path");
const { URL } = require("url");

const PINNED_VERSION = "1.0.1";
const base = "@vercel/cosmosdb-server/lib";

// The patches below depend on the internals of exactly this version.
const upstreamVersion = require("@vercel/cosmosdb-server/package.json").version;
if (upstreamVersion !== PINNED_VERSION) {
  console.error(
    `cosmos-shim: @vercel/cosmosdb-server ${upstreamVersion} installed, ${PINNED_VERSION} required (the shim patches its internals)`
  );
  process.exit(2);
}

const jsonModule = require(`${base}/json`);
const Account = require(`${base}/account`).default;
const routes = require(`${base}/routes`).default;
const pathMatch = require(`${base}/path-match`).default;
const ops = require(`${base}/handler/_document-operations`);
const patchOps = require(`${base}/handler/_patch-operations`);
const { parsePartitionKey } = require(`${base}/utils/get-partition-from-header`);
const getValue = require(`${base}/utils/get-value`).default;
const createQuery = require("@zeit/cosmosdb-query").default;

// ---------------------------------------------------------------------------
// Limits and messages of the real service.

const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const MAX_REQUEST_BYTES = 2 * 1024 * 1024; // per-request and per-item limit
const MAX_BODY_BYTES_READ = 16 * 1024 * 1024; // beyond this the socket is dropped
const MAX_ID_BYTES = 1023; // item id limit (UTF-8 bytes)
const MAX_BATCH_OPERATIONS = 100;
const DEFAULT_PAGE_SIZE = 100; // service default when x-ms-max-item-count is absent
const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000; // how far x-ms-date may be from the server clock

const MSG_CROSS_PARTITION =
  "The provided cross partition query can not be directly served by the gateway. " +
  "This is a first chance (internal) exception that all newer clients will know how to handle gracefully. " +
  "This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), " +
  "then you can safely ignore this message.";
const MSG_PRECONDITION =
  "Operation cannot be performed because one of the specified precondition is not met.";
const MSG_NOT_FOUND = "Entity with the specified id does not exist in the system.";
const MSG_PK_MISMATCH =
  "PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value";

const SUBSTATUS_PK_MISMATCH = 1001;
const SUBSTATUS_CROSS_PARTITION = 1004;

// ---------------------------------------------------------------------------
// Small helpers.

/** An error that becomes an HTTP error response. */
class HttpError extends Error {
  constructor(statusCode, code, message, substatus) {
    super(message);
    this.statusCode = statusCode;
    this.code = code;
    this.substatus = substatus;
  }
}

const badRequest = (message, substatus) => new HttpError(400, "BadRequest", message, substatus);

const headerValue = (req, name) => {
  const h = req.headers[name];
  return Array.isArray(h) ? h[0] : h;
};

const isTrue = (req, name) => String(headerValue(req, name) || "").toLowerCase() === "true";

/** A canonical JSON text of v (object keys sorted), used for DISTINCT. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map(k => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v === undefined ? null : v);
}

function deepEqual(a, b) {
  return canonical(a) === canonical(b);
}

// ---------------------------------------------------------------------------
// Authentication: master-key HMAC signatures as azcosmos computes them
// (https://learn.microsoft.com/rest/api/cosmos-db/access-control-on-cosmosdb-resources).

const authKey = Buffer.from(process.env.COSMOS_SHIM_KEY || EMULATOR_KEY, "base64");

/** decodeURIComponent, answering 400 instead of throwing on bad input. */
function percentDecode(s, what) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    throw badRequest(`The ${what} '${s}' is not valid percent-encoding.`);
  }
}

/** Resource type and link that the client signed, derived from the URL path. */
function signedResource(pathname) {
  const segs = pathname
    .split("/")
    .filter(Boolean)
    .map(s => percentDecode(s, "request path segment"));
  if (segs.length === 0) return { type: "", link: "" };
  if (segs.length % 2 === 1) {
    return { type: segs[segs.length - 1], link: segs.slice(0, -1).join("/") };
  }
  return { type: segs[segs.length - 2], link: segs.join("/") };
}

/** Returns null when the request is authorized, else the error to send. */
function checkAuth(req, pathname) {
  if (process.env.COSMOS_SHIM_NO_AUTH === "1") return null;
  const raw = headerValue(req, "authorization");
  const date = headerValue(req, "x-ms-date") || headerValue(req, "date") || "";
  if (!raw) {
    return new HttpError(401, "Unauthorized", "Required Header authorization is missing. Ensure a valid Authorization token is passed.");
  }
  // Not URLSearchParams: it would turn the '+' of the base64 signature into ' '.
  const params = new Map(
    percentDecode(raw, "authorization header")
      .split("&")
      .map(kv => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])
  );
  if (params.get("type") !== "master") {
    return new HttpError(401, "Unauthorized", `Authorization type '${params.get("type")}' is not supported by this emulator.`);
  }
  const when = Date.parse(date);
  if (Number.isNaN(when) || Math.abs(Date.now() - when) > MAX_CLOCK_SKEW_MS) {
    // The service answers a stale or future x-ms-date with 403, not 401.
    return new HttpError(
      403,
      "Forbidden",
      `The authorization token is not valid at the current time. Please create another token and retry (token start time: ${date}, current server time: ${new Date().toUTCString()}).`
    );
  }
  const { type, link } = signedResource(pathname);
  const payload = `${req.method.toLowerCase()}\n${type.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
  const want = crypto.createHmac("sha256", authKey).update(payload).digest();
  const got = Buffer.from(params.get("sig") || "", "base64");
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
    return new HttpError(
      401,
      "Unauthorized",
      "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. " +
        `For more info: https://aka.ms/cosmosdb-tsg-mac-signature. Server used the following payload to sign: '${payload}'`
    );
  }
  return null;
}

// ---------------------------------------------------------------------------
// Partition keys and item validation.

/**
 * The partition key header: {present:false} when absent (a cross-partition
 * query), else {present:true, values:[...]} where an undefined value stands
 * for the "none" key ({}).
 */
function partitionHeader(req) {
  const h = headerValue(req, "x-ms-documentdb-partitionkey");
  if (h === undefined || h === "" || h === "[]") return { present: false, raw: h };
  let v;
  try {
    v = JSON.parse(h);
  } catch (e) {
    throw badRequest(`Partition key ${h} is invalid.`);
  }
  if (!Array.isArray(v)) v = [v];
  const values = v.map(x => (x && typeof x === "object" && Object.keys(x).length === 0 ? undefined : x));
  return { present: true, raw: h, values };
}

function pkPaths(collectionData) {
  return ((collectionData.partitionKey || {}).paths || []).filter(p => p !== "/_partitionKey");
}

/** The document's values at the container's partition key paths. */
function documentPartition(collectionData, doc) {
  return pkPaths(collectionData).map(p => getValue(p.slice(1).split("/"), doc));
}

function samePartition(a, b) {
  if (a.length !== b.length) return false;
  return a.every((v, i) => (v === undefined ? b[i] === undefined : b[i] !== undefined && deepEqual(v, b[i])));
}

/**
 * Rejects ids the real service rejects at create time: '\\' (400). Ids with
 * '/', '#' or a trailing space are accepted, as the gateway accepts them,
 * and then fail every point operation by id (urlIdError); '?' works.
 * Source: the .NET SDK's id-encoding tests against the service.
 */
function validateId(id) {
  if (typeof id !== "string" || id === "") {
    throw badRequest("The input content is invalid because the required properties - 'id; ' - are missing");
  }
  if (id.includes("\\")) {
    throw badRequest(`The input name '${id}' is invalid. Ensure to provide a unique non-empty string without '\\'.`);
  }
  if (Buffer.byteLength(id, "utf8") > MAX_ID_BYTES) {
    throw badRequest(`The input name is invalid. Ensure to provide a unique non-empty string less than '${MAX_ID_BYTES + 1}' characters.`);
  }
}

/** Validates a document written under the given partition header. */
function validateDocument(collectionData, doc, pk) {
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw badRequest("The input content is invalid: a document must be a JSON object.");
  }
  validateId(doc.id);
  if (pk.present && pkPaths(collectionData).length > 0 && !samePartition(documentPartition(collectionData, doc), pk.values)) {
    throw badRequest(MSG_PK_MISMATCH, SUBSTATUS_PK_MISMATCH);
  }
}

/**
 * The gateway's answer to a point operation whose URL carries this id: 404
 * for '/' (one path segment too many), 401 for '#' or a trailing space (the
 * signature of the mangled path no longer matches). Batches and queries
 * carry ids in the body and are not affected.
 */
function urlIdError(id) {
  if (id.includes("/")) return new HttpError(404, "NotFound", MSG_NOT_FOUND);
  if (id.includes("#") || id.endsWith(" ")) {
    return new HttpError(
      401,
      "Unauthorized",
      "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol."
    );
  }
  return undefined;
}

function checkUrlId(id) {
  const e = urlIdError(id);
  if (e) throw e;
}

function requirePartitionHeader(collectionData, pk) {
  if (!pk.present && pkPaths(collectionData).length > 0) {
    throw badRequest("PartitionKey value must be supplied for this operation.");
  }
}

/**
 * The document with this id in this partition, or undefined. Upstream's
 * lookup falls back to treating an unknown id as a _rid and keys the "none"
 * partition by id, so the hit is verified here.
 */
function findDocument(collection, id, pk) {
  const collectionData = collection.read();
  let key;
  try {
    key = parsePartitionKey(pk.raw, id);
  } catch (e) {
    throw badRequest(e.message);
  }
  const doc = collection.document(id, key).read();
  if (!doc || doc.id !== id) return undefined;
  if (pk.present && !samePartition(documentPartition(collectionData, doc), pk.values)) return undefined;
  return doc;
}

function collectionOrThrow(account, dbId, collId) {
  const collection = account.database(dbId).collection(collId);
  if (!collection.read()) throw new HttpError(404, "NotFound", "Resource Not Found");
  return collection;
}

/** Converts an upstream {statusCode, body} operation result into a result or an HttpError. */
function fromOperation(r) {
  if (r.statusCode < 400) return r;
  const b = r.body || {};
  const code = { 400: "BadRequest", 404: "NotFound", 409: "Conflict", 412: "PreconditionFailed" }[r.statusCode] || "Error";
  const message =
    r.statusCode === 404 ? MSG_NOT_FOUND : r.statusCode === 412 ? b.message || MSG_PRECONDITION : b.message || code;
  throw new HttpError(r.statusCode, code, message);
}

// ---------------------------------------------------------------------------
// Document operations (shared by the point routes and the batch route). Each
// returns {statusCode, body} or throws an HttpError.

function createDocument(collection, pk, doc) {
  validateDocument(collection.read(), doc, pk);
  return fromOperation(ops.createOperation(collection, { resourceBody: doc }));
}

function upsertDocument(collection, pk, doc, ifMatch) {
  validateDocument(collection.read(), doc, pk);
  return fromOperation(ops.upsertOperation(collection, { partitionKey: pk.raw, ifMatch, resourceBody: doc }));
}

function readDocument(collection, pk, id) {
  requirePartitionHeader(collection.read(), pk);
  const doc = findDocument(collection, id, pk);
  if (!doc) throw new HttpError(404, "NotFound", MSG_NOT_FOUND);
  return { statusCode: 200, body: doc };
}

function replaceDocument(collection, pk, id, doc, ifMatch) {
  requirePartitionHeader(collection.read(), pk);
  validateDocument(collection.read(), doc, pk);
  if (doc.id !== id) throw badRequest("The id in the request body does not match the id of the resource being replaced.");
  if (!findDocument(collection, id, pk)) throw new HttpError(404, "NotFound", MSG_NOT_FOUND);
  return fromOperation(ops.replaceOperation(collection, { partitionKey: pk.raw, ifMatch, resourceBody: doc }));
}

function deleteDocument(collection, pk, id, ifMatch) {
  requirePartitionHeader(collection.read(), pk);
  if (!findDocument(collection, id, pk)) throw new HttpError(404, "NotFound", MSG_NOT_FOUND);
  return fromOperation(ops.deleteOperation(collection, { partitionKey: pk.raw, ifMatch, id }));
}

/**
 * Patch with an optional filter predicate. Upstream lower-cases the whole
 * predicate (camelCase fields and mixed-case values never match) and checks
 * it collection-wide, so it is evaluated here against the one document.
 */
function patchDocument(collection, pk, id, spec, ifMatch) {
  requirePartitionHeader(collection.read(), pk);
  if (!spec || !Array.isArray(spec.operations)) {
    throw badRequest("Invalid patch request: check syntax of patch specification.");
  }
  const doc = findDocument(collection, id, pk);
  if (!doc) throw new HttpError(404, "NotFound", MSG_NOT_FOUND);
  if (ifMatch && ifMatch !== doc._etag) throw new HttpError(412, "PreconditionFailed", MSG_PRECONDITION);
  if (spec.condition && !conditionHolds(collection, doc, spec.condition)) {
    throw new HttpError(412, "PreconditionFailed", "Condition specified in the patch request is not satisfied.");
  }
  return fromOperation(
    patchOps.patchOperation(collection, { id, partitionKey: pk.raw, ifMatch, operations: spec.operations })
  );
}

function conditionHolds(collection, doc, condition) {
  const c = condition.trim();
  let sql;
  if (/^from\s/i.test(c)) sql = `SELECT * ${c}`;
  else if (/^where\s/i.test(c)) sql = `SELECT * FROM c ${c}`;
  else if (/^select\s/i.test(c)) sql = c;
  else throw badRequest("Invalid condition in patch request: it must start with FROM.");
  const like = rewriteLike(sql, []);
  const q = parameterizeLiterals(like.sql, like.parameters);
  return runQuery(collection, [doc], { query: q.sql, parameters: q.parameters }, {}).result.length > 0;
}

/**
 * Replaces the string and number literals of a query by parameters, so that
 * conditions differing only in values (a lock token, a time) share one
 * parsed query. Literals right after '[' stay: they name properties or
 * array indexes.
 */
function parameterizeLiterals(sql, parameters) {
  const bare = withoutLiterals(sql);
  const params = [...(parameters || [])];
  const re = /'[ ]*'|"[ ]*"|(?<![\w.@$])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])/g;
  let out = "";
  let last = 0;
  let m;
  while ((m = re.exec(bare)) !== null) {
    if (/\[\s*$/.test(bare.slice(0, m.index))) continue;
    const text = sql.slice(m.index, m.index + m[0].length);
    const value = text[0] === "'" || text[0] === '"' ? literalValue(text) : Number(text);
    const name = `@__shim_lit${params.length}`;
    params.push({ name, value });
    out += sql.slice(last, m.index) + name;
    last = m.index + m[0].length;
  }
  return { sql: out + sql.slice(last), parameters: params };
}

// ---------------------------------------------------------------------------
// Queries.

/**
 * The query text with the inside of string literals blanked (quotes kept), so
 * keywords inside literals never match and positions stay those of sql.
 */
function withoutLiterals(sql) {
  return sql.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, m => m[0] + " ".repeat(m.length - 2) + m[m.length - 1]);
}

/** The value of a SQL string literal (quotes included), with backslash escapes. */
function literalValue(text) {
  const esc = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" };
  return text
    .slice(1, -1)
    .replace(/\\(u[0-9a-fA-F]{4}|.)/g, (m, e) => (e[0] === "u" && e.length === 5 ? String.fromCharCode(parseInt(e.slice(1), 16)) : esc[e] || e));
}

/** A LIKE pattern (% any run, _ one character, [...] a class) as an anchored regex. */
function likeToRegex(pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i += 1) {
    const ch = pattern[i];
    if (ch === "%") re += "[\\s\\S]*";
    else if (ch === "_") re += "[\\s\\S]";
    else if (ch === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) throw badRequest(`Invalid LIKE pattern '${pattern}'.`);
      re += `[${pattern.slice(i + 1, end).replace(/\\/g, "\\\\")}]`;
      i = end;
    } else re += ch.replace(/[.*+?^${}()|\\/\]]/g, "\\$&");
  }
  return `^${re}$`;
}

/**
 * Rewrites "<path> [NOT] LIKE <literal|@param>" as REGEXMATCH, which the
 * upstream engine has (it has no LIKE). The operand must be a property path
 * (c.a.b, c["a"], c.a[0]); ESCAPE is not supported.
 */
function rewriteLike(sql, parameters) {
  const bare = withoutLiterals(sql);
  const re = /(?<![.\w])(NOT\s+)?LIKE\b/gi;
  const hits = [];
  let m;
  while ((m = re.exec(bare)) !== null) hits.push({ at: m.index, not: Boolean(m[1]), after: m.index + m[0].length });
  if (hits.length === 0) return { sql, parameters };
  const params = [...(parameters || [])];
  let out = sql;
  hits.reverse().forEach((h, n) => {
    // Operand: the property path right before [NOT] LIKE, scanned backwards.
    let i = h.at;
    while (i > 0 && /\s/.test(bare[i - 1])) i -= 1;
    const opEnd = i;
    while (i > 0) {
      const ch = bare[i - 1];
      if (ch === "]") {
        const open = bare.lastIndexOf("[", i - 1);
        if (open < 0) break;
        i = open;
      } else if (/[\w.]/.test(ch)) i -= 1;
      else break;
    }
    const operand = sql.slice(i, opEnd);
    if (!/^[A-Za-z_]/.test(operand)) throw badRequest("LIKE is supported on property paths only by this emulator.");
    // Pattern: a string literal or a parameter.
    let j = h.after;
    while (j < bare.length && /\s/.test(bare[j])) j += 1;
    let pattern;
    let patEnd;
    if (bare[j] === "'" || bare[j] === '"') {
      patEnd = bare.indexOf(bare[j], j + 1) + 1;
      pattern = literalValue(sql.slice(j, patEnd));
    } else {
      const pm = /^@\w+/.exec(bare.slice(j));
      if (!pm) throw badRequest("LIKE needs a string literal or a parameter.");
      patEnd = j + pm[0].length;
      const p = params.find(x => x.name === pm[0]);
      pattern = p && typeof p.value === "string" ? p.value : undefined;
    }
    if (/^\s*ESCAPE\b/i.test(bare.slice(patEnd))) throw badRequest("LIKE ... ESCAPE is not supported by this emulator.");
    const name = `@__shim_like${n}`;
    params.push({ name, value: pattern === undefined ? null : likeToRegex(pattern) });
    out = `${out.slice(0, i)}${h.not ? "NOT " : ""}REGEXMATCH(${operand}, ${name})${out.slice(patEnd)}`;
  });
  return { sql: out, parameters: params };
}

// Constructs the gateway cannot serve across partitions (azcosmos 1.5.0 has no
// client-side query engine, so the gateway answers 400/1004 for these).
const CROSS_PARTITION_UNSERVABLE = [
  /(?<![.\w])TOP\b/i,
  /(?<![.\w])ORDER\s+BY\b/i,
  /(?<![.\w])DISTINCT\b/i,
  /(?<![.\w])OFFSET\b/i,
  /(?<![.\w])GROUP\s+BY\b/i,
  /(?<![.\w])(COUNT|SUM|AVG|MIN|MAX)\s*\(/i
];

function needsQueryEngine(sql) {
  const bare = withoutLiterals(sql);
  return CROSS_PARTITION_UNSERVABLE.some(re => re.test(bare));
}

// Parsed queries by text, shared by all containers. Upstream caches 100 per
// container, and every test uses fresh containers, so it re-parsed the same
// texts over and over: its PEG parser was most of the shim's CPU time. A
// parsed query is immutable (it only caches its compiled code).
const parsedQueries = new Map();
const MAX_PARSED_QUERIES = 5000;

function parseQuery(sql) {
  let q = parsedQueries.get(sql);
  if (!q) {
    try {
      q = createQuery(sql);
    } catch (err) {
      throw badRequest(`Syntax error: ${err.message}`);
    }
    if (parsedQueries.size >= MAX_PARSED_QUERIES) parsedQueries.clear();
    parsedQueries.set(sql, q);
  }
  return q;
}

/** Runs a query with upstream's SQL engine over the given documents. */
function runQuery(collection, docs, body, { maxItemCount, continuation }) {
  const items = collection.documents;
  const collectionData = collection.read();
  const q = parseQuery(body.query);
  try {
    return q.exec(docs, {
      parameters: body.parameters || [],
      udf: items._userDefinedFunctions(),
      maxItemCount,
      continuation,
      compositeIndexes: ((collectionData.indexingPolicy || {}).compositeIndexes || []).filter(Boolean)
    });
  } catch (err) {
    throw badRequest(err.message);
  }
}

/**
 * Splits off what upstream's parser lacks: SELECT DISTINCT (with the TOP that
 * must then apply after de-duplication) and a trailing OFFSET m LIMIT n.
 * Returns null when the query needs no rewriting.
 */
function rewriteUnsupported(sql, parameters) {
  const bare = withoutLiterals(sql);
  const out = { sql, distinct: false, top: undefined, offset: 0, limit: undefined };
  const param = v => {
    if (/^@/.test(v)) {
      const p = (parameters || []).find(x => x.name === v);
      if (!p || typeof p.value !== "number") throw badRequest(`Parameter ${v} must be a number.`);
      return p.value;
    }
    return parseInt(v, 10);
  };
  const ol = /\s+OFFSET\s+(\d+|@\w+)\s+LIMIT\s+(\d+|@\w+)\s*$/i.exec(bare);
  if (ol) {
    out.offset = param(ol[1]);
    out.limit = param(ol[2]);
    out.sql = out.sql.slice(0, ol.index);
  }
  const d = /^\s*SELECT\s+DISTINCT\s+/i.exec(bare);
  if (d) {
    out.distinct = true;
    let rest = out.sql.slice(d[0].length);
    const top = /^TOP\s+(\d+|@\w+)\s+/i.exec(rest);
    if (top) {
      out.top = param(top[1]);
      rest = rest.slice(top[0].length);
    }
    out.sql = `SELECT ${rest}`;
  }
  return ol || d ? out : null;
}

const SHIM_TOKEN_PREFIX = "+SHIM:";

/**
 * Executes a rewritten query: the whole result is computed, post-processed
 * and then paged with a shim-owned offset continuation.
 */
function runRewritten(collection, docs, body, rw, maxItemCount, continuation) {
  let rows = runQuery(collection, docs, { query: rw.sql, parameters: body.parameters }, {}).result;
  if (rw.distinct) {
    const seen = new Set();
    rows = rows.filter(r => {
      const k = canonical(r);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    if (rw.top !== undefined) rows = rows.slice(0, rw.top);
  }
  if (rw.limit !== undefined) rows = rows.slice(rw.offset, rw.offset + rw.limit);
  let start = 0;
  if (continuation) {
    const t = String(continuation.token || "");
    if (!t.startsWith(SHIM_TOKEN_PREFIX)) throw badRequest("Invalid continuation token.");
    start = parseInt(t.slice(SHIM_TOKEN_PREFIX.length), 10) || 0;
  }
  const end = maxItemCount > 0 ? start + maxItemCount : rows.length;
  return {
    result: rows.slice(start, end),
    continuation: end < rows.length ? { token: `${SHIM_TOKEN_PREFIX}${end}`, range: { min: "", max: "FF" } } : null
  };
}

/**
 * The partition a cross-partition query pins with a top-level equality on
 * the partition key (c.pk = 'x' or = @p), as the gateway routes such a query
 * to that one partition; undefined when it pins none. Conservative: a WHERE
 * clause with OR never pins, and only single-path keys are recognised.
 */
function pinnedPartition(sql, parameters, collectionData) {
  const paths = pkPaths(collectionData);
  if (paths.length !== 1) return undefined;
  const bare = withoutLiterals(sql);
  const from = /\bFROM\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?/i.exec(bare);
  const where = /\bWHERE\b([\s\S]*?)(?:\bORDER\s+BY\b|\bGROUP\s+BY\b|\bOFFSET\b|$)/di.exec(bare);
  if (!from || !where || /\b(OR|NOT)\b/i.test(where[1])) return undefined;
  const alias = from[2] && !/^(WHERE|JOIN|ORDER|GROUP|OFFSET)$/i.test(from[2]) ? from[2] : from[1];
  const esc = x => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const path = [alias, ...paths[0].slice(1).split("/")].map(esc).join("\\s*\\.\\s*");
  const value = "('[ ]*'|\"[ ]*\"|@\\w+|-?\\d+(?:\\.\\d+)?|true|false|null)(?![\\w.])";
  const m = new RegExp(`(?<![\\w.])${path}\\s*=\\s*${value}`, "di").exec(where[1]);
  if (!m) return undefined;
  const at = where.indices[1][0] + m.indices[1][0];
  const text = sql.slice(at, at + m[1].length);
  if (text[0] === "'" || text[0] === '"') return [literalValue(text)];
  if (text[0] === "@") {
    const p = (parameters || []).find(x => x.name === text);
    return p ? [p.value] : undefined;
  }
  return [JSON.parse(text.toLowerCase())];
}

function queryDocuments(account, req, res, { dbId, collId }) {
  const raw = req.shimJSON();
  if (!raw || typeof raw.query !== "string") throw badRequest("missing query");
  const body = { ...raw, ...rewriteLike(raw.query, raw.parameters) };
  body.query = body.sql;
  const collection = collectionOrThrow(account, dbId, collId);
  const collectionData = collection.read();
  let pk = partitionHeader(req);
  if (!pk.present) {
    const pinned = pinnedPartition(body.query, body.parameters, collectionData);
    if (pinned) pk = { present: true, values: pinned };
  }

  if (!pk.present) {
    if (!isTrue(req, "x-ms-documentdb-query-enablecrosspartition") && pkPaths(collectionData).length > 0) {
      throw badRequest("Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.");
    }
    if (process.env.COSMOS_SHIM_LENIENT !== "1" && needsQueryEngine(body.query)) {
      throw badRequest(MSG_CROSS_PARTITION, SUBSTATUS_CROSS_PARTITION);
    }
  }

  let docs = [...collection.documents._data.values()].map(it => it.read());
  if (pk.present) {
    docs = docs.filter(d => samePartition(documentPartition(collectionData, d), pk.values));
  }

  const h = headerValue(req, "x-ms-max-item-count");
  const maxItemCount = h ? parseInt(h, 10) : DEFAULT_PAGE_SIZE;
  const ch = headerValue(req, "x-ms-continuation");
  let continuation = null;
  if (ch) {
    try {
      continuation = JSON.parse(ch);
    } catch (e) {
      throw badRequest("Invalid continuation token.");
    }
  }

  const rw = rewriteUnsupported(body.query, body.parameters);
  const out = rw
    ? runRewritten(collection, docs, body, rw, maxItemCount, continuation)
    : runQuery(collection, docs, body, { maxItemCount, continuation });

  setSessionToken(res, collection, false);
  if (out.continuation) res.setHeader("x-ms-continuation", JSON.stringify(out.continuation));
  res.setHeader("x-ms-item-count", String(out.result.length));
  return { statusCode: 200, body: { _rid: collectionData._rid, Documents: out.result, _count: out.result.length } };
}

// ---------------------------------------------------------------------------
// Transactional batch: partition key from the header, Patch supported,
// all-or-nothing, 207 with the failing status and 424 for the others.

function runBatchOperation(collection, pk, op) {
  const rb = op.resourceBody;
  switch (op.operationType) {
    case "Create":
      return createDocument(collection, pk, rb);
    case "Upsert":
      return upsertDocument(collection, pk, rb, op.ifMatch);
    case "Read":
      return readDocument(collection, pk, op.id);
    case "Replace":
      return replaceDocument(collection, pk, op.id, rb, op.ifMatch);
    case "Delete":
      return deleteDocument(collection, pk, op.id, op.ifMatch);
    case "Patch":
      return patchDocument(collection, pk, op.id, rb, op.ifMatch);
    default:
      throw badRequest(`Operation type '${op.operationType}' is not supported in Batch.`);
  }
}

function snapshot(items) {
  return { data: new Map(items._data), index: new Map(items._index), rid: items._ridCount };
}

function restore(items, snap) {
  items._data = snap.data;
  items._index = snap.index;
  items._ridCount = snap.rid;
}

function batchDocuments(account, req, res, { dbId, collId }) {
  const body = req.shimJSON();
  const collection = collectionOrThrow(account, dbId, collId);
  if (!Array.isArray(body) || body.length === 0) throw badRequest("Batch request has no operations.");
  if (body.length > MAX_BATCH_OPERATIONS) {
    throw badRequest("Batch request has more operations than what is supported.");
  }
  const pk = partitionHeader(req);
  requirePartitionHeader(collection.read(), pk);
  const minimal = prefersMinimal(req);

  const snap = snapshot(collection.documents);
  const results = [];
  for (let i = 0; i < body.length; i += 1) {
    const op = body[i] || {};
    let r;
    try {
      r = runBatchOperation(collection, pk, op);
    } catch (err) {
      restore(collection.documents, snap);
      if (!(err instanceof HttpError)) throw err;
      res.statusCode = 207;
      return {
        statusCode: 207,
        body: body.map((_, j) =>
          j === i
            ? { statusCode: err.statusCode, subStatusCode: err.substatus || 0, requestCharge: 1 }
            : { statusCode: 424, requestCharge: 0 }
        )
      };
    }
    const isRead = op.operationType === "Read";
    const result = { statusCode: r.statusCode, requestCharge: 1 };
    if (r.body && r.body._etag) result.eTag = r.body._etag;
    if (r.body && (isRead || !minimal)) result.resourceBody = r.body;
    results.push(result);
  }
  setSessionToken(res, collection, true);
  return { statusCode: 200, body: results };
}

// ---------------------------------------------------------------------------
// Session tokens: "<range>:<version>#<lsn>" with one partition key range per
// container and an LSN that every committed write advances.

const lsns = new WeakMap();

function setSessionToken(res, collection, write) {
  const items = collection.documents;
  let lsn = lsns.get(items) || 1;
  if (write) {
    lsn += 1;
    lsns.set(items, lsn);
  }
  res.setHeader("x-ms-session-token", `0:-1#${lsn}`);
}

// ---------------------------------------------------------------------------
// Point routes.

function prefersMinimal(req) {
  return /return=minimal/i.test(headerValue(req, "prefer") || "");
}

/** A write result: no body when the client asked for a minimal response. */
function writeResult(req, r) {
  return { statusCode: r.statusCode, body: r.body, etag: r.body && r.body._etag, minimal: prefersMinimal(req) };
}

function createOrUpsert(account, req, res, { dbId, collId }) {
  const collection = collectionOrThrow(account, dbId, collId);
  const pk = partitionHeader(req);
  const doc = req.shimJSON();
  const r = isTrue(req, "x-ms-documentdb-is-upsert")
    ? upsertDocument(collection, pk, doc, headerValue(req, "if-match"))
    : createDocument(collection, pk, doc);
  setSessionToken(res, collection, true);
  return writeResult(req, r);
}

const handlers = {
  read(account, req, res, { dbId, collId, docId }) {
    checkUrlId(docId);
    const collection = collectionOrThrow(account, dbId, collId);
    const r = readDocument(collection, partitionHeader(req), docId);
    setSessionToken(res, collection, false);
    return { statusCode: 200, body: r.body, etag: r.body._etag };
  },
  replace(account, req, res, { dbId, collId, docId }) {
    checkUrlId(docId);
    const collection = collectionOrThrow(account, dbId, collId);
    const r = replaceDocument(collection, partitionHeader(req), docId, req.shimJSON(), headerValue(req, "if-match"));
    setSessionToken(res, collection, true);
    return writeResult(req, r);
  },
  delete(account, req, res, { dbId, collId, docId }) {
    checkUrlId(docId);
    const collection = collectionOrThrow(account, dbId, collId);
    deleteDocument(collection, partitionHeader(req), docId, headerValue(req, "if-match"));
    setSessionToken(res, collection, true);
    return { statusCode: 204 };
  },
  patch(account, req, res, { dbId, collId, docId }) {
    checkUrlId(docId);
    const collection = collectionOrThrow(account, dbId, collId);
    const r = patchDocument(collection, partitionHeader(req), docId, req.shimJSON(), headerValue(req, "if-match"));
    setSessionToken(res, collection, true);
    return writeResult(req, r);
  },
  createOrUpsert,
  query: queryDocuments,
  batch: batchDocuments,
  account(account) {
    return { statusCode: 200, body: account.read() };
  }
};

const matchDocs = pathMatch("/dbs/:dbId/colls/:collId/docs");
const matchDoc = pathMatch("/dbs/:dbId/colls/:collId/docs/:docId");

/** Picks a shim-owned handler, or returns undefined to fall back to upstream's routes. */
function ownRoute(req, pathname) {
  if (pathname === "/" && req.method === "GET") return [{}, handlers.account];
  let params = matchDoc(pathname);
  if (params) {
    const h = { GET: handlers.read, PUT: handlers.replace, DELETE: handlers.delete, PATCH: handlers.patch }[req.method];
    return h && [params, h];
  }
  params = matchDocs(pathname);
  if (params && req.method === "POST") {
    const ct = String(headerValue(req, "content-type") || "");
    if (isTrue(req, "x-ms-documentdb-isquery") || isTrue(req, "x-ms-documentdb-query") || ct.startsWith("application/query+json")) {
      return [params, handlers.query];
    }
    if (isTrue(req, "x-ms-cosmos-is-batch-request")) return [params, handlers.batch];
    return [params, handlers.createOrUpsert];
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// HTTP plumbing.

// Upstream handlers read the body themselves; it has already been read here.
jsonModule.default = async req => req.shimJSON();

function normalizePath(rawUrl) {
  let pathname = new URL(rawUrl, "http://x").pathname;
  if (pathname.startsWith("//")) pathname = pathname.slice(1);
  while (pathname.length > 1 && pathname.endsWith("/")) pathname = pathname.slice(0, -1);
  return pathname;
}

/** The client went away before sending the whole request: nothing to answer. */
class ClientGone extends Error {}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", c => {
      size += c.length;
      if (size > MAX_BODY_BYTES_READ) {
        reject(new HttpError(413, "RequestEntityTooLarge", "Request size is too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
    req.on("aborted", () => reject(new ClientGone()));
  });
}

function send(req, res, statusCode, body, { etag, substatus, minimal } = {}) {
  res.statusCode = statusCode;
  if (etag) res.setHeader("etag", etag);
  res.setHeader("content-type", "application/json");
  res.setHeader("connection", "keep-alive");
  res.setHeader("x-ms-activity-id", crypto.randomUUID());
  res.setHeader("x-ms-request-charge", "1");
  res.setHeader("x-ms-substatus", String(substatus || 0));
  if (statusCode === 204 || minimal || body === undefined) {
    res.end();
    return;
  }
  res.end(JSON.stringify(body));
}

function sendError(req, res, err) {
  send(req, res, err.statusCode, { code: err.code, message: err.message }, { substatus: err.substatus });
}

/** Runs one of upstream's handlers and finishes the response the way upstream does. */
async function runUpstream(account, req, res, params, handler) {
  let body = await handler(account, req, res, params);
  if (res.statusCode > 399 && (!body || !body.message)) body = { ...(body || {}), message: "" };
  let etag = body && body._etag;
  if (req.headers["a-im"] && res.statusCode === 200) {
    if (req.headers["if-none-match"]) res.statusCode = 304;
    etag = "1";
  }
  send(req, res, res.statusCode, body, { etag });
}

async function handle(account, req, res) {
  let pathname;
  try {
    pathname = normalizePath(req.url);
    const raw = await readBody(req);
    let parsed;
    req.shimJSON = () => {
      if (parsed === undefined) {
        try {
          parsed = raw.length ? JSON.parse(raw.toString("utf8")) : null;
        } catch (e) {
          throw badRequest(`The request payload is invalid: ${e.message}`);
        }
      }
      return parsed;
    };
    const authError = checkAuth(req, pathname);
    if (authError) throw authError;
    if (raw.length > MAX_REQUEST_BYTES) {
      throw new HttpError(413, "RequestEntityTooLarge", "Request size is too large");
    }
    const own = ownRoute(req, pathname);
    if (own) {
      const [params, handler] = own;
      const r = handler(account, req, res, params);
      send(req, res, r.statusCode, r.body, r);
      return;
    }
    const route = routes(req);
    if (!route) throw badRequest("no route");
    await runUpstream(account, req, res, route[0], route[1]);
  } catch (err) {
    // (Not req.destroyed: a request is destroyed once its body is read.)
    if (res.headersSent || err instanceof ClientGone || res.destroyed) return;
    if (err instanceof HttpError) {
      sendError(req, res, err);
      return;
    }
    console.error(`cosmos-shim: ${req.method} ${pathname}:`, err);
    sendError(req, res, new HttpError(500, "InternalServerError", err.message));
  }
}

function main() {
  const tls = process.env.TLS === "1";
  const host = process.env.HOST || "127.0.0.1";
  const port = parseInt(process.env.PORT === undefined ? "8081" : process.env.PORT, 10);
  let account;
  const onRequest = (req, res) => {
    handle(account, req, res);
  };
  const pkgDir = path.dirname(require.resolve("@vercel/cosmosdb-server/package.json"));
  const server = tls
    ? https.createServer({ cert: fs.readFileSync(path.join(pkgDir, "cert.pem")), key: fs.readFileSync(path.join(pkgDir, "key.pem")) }, onRequest)
    : http.createServer(onRequest);
  // Keep idle connections open longer than Go's idle timeout so a pooled
  // connection is never closed under a write the SDK would not retry.
  server.keepAliveTimeout = 10 * 60 * 1000;
  server.headersTimeout = server.keepAliveTimeout + 1000;
  server.requestTimeout = 0;

  server.listen(port, host, () => {
    const addr = server.address();
    account = new Account(addr.address, addr.port);
    // Advertise the scheme actually served: azcosmos routes every data-plane
    // request to the endpoint the account read returns.
    const endpoint = `${tls ? "https" : "http"}://${addr.address}:${addr.port}/`;
    const data = account.read();
    data.writableLocations[0].databaseAccountEndpoint = endpoint;
    data.readableLocations[0].databaseAccountEndpoint = endpoint;
    if (process.env.PORT_FILE) {
      const tmp = `${process.env.PORT_FILE}.tmp`;
      fs.writeFileSync(tmp, `${addr.port}\n`);
      fs.renameSync(tmp, process.env.PORT_FILE);
    }
    console.log(`cosmos-shim listening on ${endpoint} (@vercel/cosmosdb-server ${upstreamVersion})`);
  });

  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main();

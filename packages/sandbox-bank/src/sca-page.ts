/**
 * The sandbox's SCA page, written for the bank's customer (SPEC 1.2: the sandbox asks for a test
 * identification number; here with a one-time code, as the page says it uses one): server-rendered
 * HTML, one form per step, no script, so it works without JavaScript and with assistive technology
 * (labels, fieldsets, hints tied to their fields, a live error region). Every value shown is escaped.
 */

export interface PageAccount {
  readonly resourceId: string;
  readonly label: string;
  readonly checked: boolean;
}

export interface PageAgreement {
  readonly id: string;
  readonly name: string;
  /** The names of the accounts it grants, as the customer knows them. */
  readonly accounts: readonly string[];
  readonly checked: boolean;
}

/** What the customer allows by granting a consent, in words (SPEC 1.9, 8). */
export interface ConsentTerms {
  readonly access: string;
  readonly validUntil: string;
  readonly frequency: string;
}

export type PageStep =
  | {
      readonly kind: "identify";
      readonly identity: string;
      /** The method the page stands in for (X-PSU-AuthMethod-Preferred), or the one-time code. */
      readonly method: string;
      /** The sandbox's fixed one-time code, told on a help line. */
      readonly oneTimeCode: string;
    }
  | {
      readonly kind: "consent";
      readonly customerName: string;
      readonly context: "PRIVATE" | "CORPORATE";
      readonly terms: ConsentTerms;
      readonly agreements: readonly PageAgreement[];
      readonly accounts: readonly PageAccount[];
    }
  | {
      readonly kind: "payment";
      readonly customerName: string;
      readonly lines: readonly [string, string][];
      /** A corporate customer's agreements to approve under; empty for a private one. */
      readonly agreements: readonly PageAgreement[];
    }
  /** The authorisation is over: what happened, in a sentence. */
  | { readonly kind: "finished"; readonly outcome: string; readonly done: boolean };

export interface Page {
  readonly action: string;
  readonly formToken: string;
  /** What the provider asks for, in one sentence naming it. */
  readonly purpose: string;
  /** Who the provider is: its registered name and register id. */
  readonly provider: string;
  /** TPP-Redirect-Preferred: false (SPEC 5.13): the TPP asked for the bank app's biometric flow. */
  readonly appFlowRequested: boolean;
  readonly step: PageStep;
  readonly error: string | undefined;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function renderPage(page: Page): string {
  const { step } = page;
  const error =
    page.error === undefined ? "" : `<p class="error" role="alert" id="error">${escapeHtml(page.error)}</p>`;
  const described = page.error === undefined ? "" : ` aria-describedby="error"`;
  let body: string;
  switch (step.kind) {
    case "identify":
      body = `<form method="post" action="${escapeHtml(page.action)}">
${hidden(page.formToken)}
<label for="identity">National identification number</label>
<p class="hint" id="identity-hint">11 digits; a company signs in with its 9-digit organisation number.</p>
<input id="identity" name="identity" inputmode="numeric" autocomplete="off" required maxlength="20" value="${escapeHtml(step.identity)}" aria-describedby="identity-hint${page.error === undefined ? "" : " error"}">
<label for="code">One-time code</label>
<p class="hint" id="code-hint">Test environment: the one-time code is always <strong>${escapeHtml(step.oneTimeCode)}</strong>.</p>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required maxlength="6" aria-describedby="code-hint${page.error === undefined ? "" : " error"}">
<p class="hint">Authentication method: ${escapeHtml(step.method)}</p>${
        page.appFlowRequested
          ? `\n<p class="hint">The provider asked for the bank app's biometric flow; the test environment has no app, so this page stands in for it.</p>`
          : ""
      }
${buttons("identify", "Continue")}
</form>`;
      break;
    case "consent":
      body = `<form method="post" action="${escapeHtml(page.action)}">
${hidden(page.formToken)}
<p>Signed in as <strong>${escapeHtml(step.customerName)}</strong>.</p>
<dl class="terms">${definitions([
        ["Access", step.terms.access],
        ["Valid until", step.terms.validUntil],
        ["How often", step.terms.frequency],
      ])}</dl>
${step.context === "CORPORATE" ? agreementsFieldset(step.agreements, "Company agreement to act under") : `<input type="hidden" name="context" value="PRIVATE">`}
<fieldset${described}><legend>Accounts the provider may read</legend>
${step.accounts.map((a) => checkbox("account", a.resourceId, a.label, a.checked)).join("\n")}
</fieldset>
${buttons("authorise", "Grant access")}
</form>`;
      break;
    case "payment":
      body = `<form method="post" action="${escapeHtml(page.action)}">
${hidden(page.formToken)}
<p>Signed in as <strong>${escapeHtml(step.customerName)}</strong>.</p>
<dl>${definitions(step.lines)}</dl>
${step.agreements.length > 0 ? agreementsFieldset(step.agreements, "Company agreement to approve under") : ""}
${buttons("authorise", "Approve")}
</form>`;
      break;
    case "finished":
      body = `<p class="${step.done ? "done" : "error"}">${escapeHtml(step.outcome)}</p>
<p>You can close this page and return to the provider's app.</p>`;
      break;
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox Bank: strong customer authentication</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Sandbox Bank</h1>
<p class="purpose">${escapeHtml(page.purpose)}</p>
<p class="hint">${escapeHtml(page.provider)}</p>
${error}
${body}
<p class="note">Test environment: no real person, account or money is involved.</p>
</main>
</body>
</html>
`;
}

/** A page with only a heading and a message: expired or unknown links, unreadable forms. */
export function renderMessage(text: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox Bank</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Sandbox Bank</h1>
<p class="error" role="alert">${escapeHtml(text)}</p>
</main>
</body>
</html>
`;
}

function definitions(lines: readonly (readonly [string, string])[]): string {
  return lines.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join("");
}

function hidden(formToken: string): string {
  return `<input type="hidden" name="token" value="${escapeHtml(formToken)}">`;
}

function buttons(action: string, label: string): string {
  return `<div class="buttons">
<button type="submit" name="action" value="${action}">${escapeHtml(label)}</button>
<button type="submit" name="action" value="cancel" formnovalidate class="secondary">Cancel</button>
</div>`;
}

function checkbox(name: string, value: string, label: string, checked: boolean): string {
  const id = `${name}-${value}`;
  return `<div><input type="checkbox" id="${escapeHtml(id)}" name="${name}" value="${escapeHtml(value)}"${checked ? " checked" : ""}> <label for="${escapeHtml(id)}">${escapeHtml(label)}</label></div>`;
}

function agreementsFieldset(agreements: readonly PageAgreement[], legend: string): string {
  const options = agreements.map((agreement) => {
    const id = `agreement-${agreement.id}`;
    return `<div><input type="radio" id="${escapeHtml(id)}" name="agreement" value="${escapeHtml(agreement.id)}" required${agreement.checked ? " checked" : ""}> <label for="${escapeHtml(id)}">${escapeHtml(agreement.name)}: ${escapeHtml(agreement.accounts.join(", "))}</label></div>`;
  });
  return `<input type="hidden" name="context" value="CORPORATE">
<fieldset><legend>${escapeHtml(legend)}</legend>
${options.join("\n")}
</fieldset>`;
}

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;background:#f4f6f8;color:#1a1a1a}
main{max-width:32rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;color:#0b4f6c}label{font-weight:600;display:block;margin-top:1rem}fieldset label,dd label{display:inline;margin:0}
input[name=identity],input[name=code]{display:block;width:100%;padding:.5rem;margin:.4rem 0 .5rem;font-size:1.1rem;box-sizing:border-box}
fieldset{border:1px solid #c8d0d8;border-radius:6px;margin:1rem 0}fieldset div{margin:.3rem 0}fieldset label{font-weight:400}
.buttons{display:flex;gap:.75rem;margin-top:1rem}button{padding:.6rem 1.2rem;font-size:1rem;border-radius:6px;border:2px solid #0b4f6c;background:#0b4f6c;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#0b4f6c}button:focus-visible,input:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.error{color:#a4000f;font-weight:600}.done{color:#0b6c2e;font-weight:600}.hint,.note{color:#4a4a4a;font-size:.9rem;margin:.2rem 0}
.purpose{font-size:1.05rem}dt{font-weight:600}dd{margin:0 0 .5rem}.terms{background:#f4f6f8;padding:.5rem .75rem;border-radius:6px}`;

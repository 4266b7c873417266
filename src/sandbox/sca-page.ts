/**
 * The sandbox's SCA page (SPEC 1.2: it only asks for a mocked national identification number):
 * server-rendered HTML, one form per step, no script, so it works without JavaScript and with
 * assistive technology (labels, fieldsets, a live error region). Every value shown is escaped.
 */

export interface PageAccount {
  readonly resourceId: string;
  readonly label: string;
  readonly checked: boolean;
}

export interface PageAgreement {
  readonly id: string;
  readonly name: string;
  readonly accounts: readonly string[];
  readonly checked: boolean;
}

export type PageStep =
  | { readonly kind: "identify"; readonly identity: string }
  | {
      readonly kind: "consent";
      readonly customerName: string;
      readonly context: "PRIVATE" | "CORPORATE";
      readonly agreements: readonly PageAgreement[];
      readonly accounts: readonly PageAccount[];
    }
  | { readonly kind: "payment"; readonly customerName: string; readonly lines: readonly [string, string][] }
  | { readonly kind: "finished"; readonly scaStatus: string };

export interface Page {
  readonly action: string;
  readonly formToken: string;
  /** What the TPP asks for, in one sentence. */
  readonly purpose: string;
  readonly method: string;
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
<label for="identity">National identification number (mocked; the sandbox customer's customerNumber)</label>
<input id="identity" name="identity" inputmode="numeric" autocomplete="off" required maxlength="20" value="${escapeHtml(step.identity)}"${described}>
<p class="hint">Authentication method: ${escapeHtml(page.method)}</p>${
        page.appFlowRequested
          ? `\n<p class="hint">The provider asked for the bank app's biometric flow; the sandbox has no app, so this page stands in for it.</p>`
          : ""
      }
${buttons("identify", "Continue")}
</form>`;
      break;
    case "consent":
      body = `<form method="post" action="${escapeHtml(page.action)}">
${hidden(page.formToken)}
<p>Signed in as <strong>${escapeHtml(step.customerName)}</strong>.</p>
${step.context === "CORPORATE" ? agreementsFieldset(step.agreements) : `<input type="hidden" name="context" value="PRIVATE">`}
<fieldset${described}><legend>Accounts the provider may read (details, balances and transactions)</legend>
${step.accounts.map((a) => checkbox("account", a.resourceId, a.label, a.checked)).join("\n")}
</fieldset>
${buttons("authorise", "Grant access")}
</form>`;
      break;
    case "payment":
      body = `<form method="post" action="${escapeHtml(page.action)}">
${hidden(page.formToken)}
<p>Signed in as <strong>${escapeHtml(step.customerName)}</strong>.</p>
<dl>${step.lines.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join("")}</dl>
${buttons("authorise", "Approve")}
</form>`;
      break;
    case "finished":
      body = `<p>This authorisation is ${escapeHtml(step.scaStatus)}. Return to the provider's app to go on.</p>`;
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
${error}
${body}
<p class="note">Test environment: no real person, account or money is involved.</p>
</main>
</body>
</html>
`;
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

function agreementsFieldset(agreements: readonly PageAgreement[]): string {
  const options = agreements.map((agreement) => {
    const id = `agreement-${agreement.id}`;
    return `<div><input type="radio" id="${escapeHtml(id)}" name="agreement" value="${escapeHtml(agreement.id)}" required${agreement.checked ? " checked" : ""}> <label for="${escapeHtml(id)}">${escapeHtml(agreement.name)} (${escapeHtml(agreement.accounts.join(", "))})</label></div>`;
  });
  return `<input type="hidden" name="context" value="CORPORATE">
<fieldset><legend>Corporate agreement to act under</legend>
${options.join("\n")}
</fieldset>`;
}

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;background:#f4f6f8;color:#1a1a1a}
main{max-width:32rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;color:#0b4f6c}label{font-weight:600}input[name=identity]{display:block;width:100%;padding:.5rem;margin:.4rem 0 1rem;font-size:1.1rem;box-sizing:border-box}
fieldset{border:1px solid #c8d0d8;border-radius:6px;margin:1rem 0}fieldset div{margin:.3rem 0}fieldset label{font-weight:400}
.buttons{display:flex;gap:.75rem;margin-top:1rem}button{padding:.6rem 1.2rem;font-size:1rem;border-radius:6px;border:2px solid #0b4f6c;background:#0b4f6c;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#0b4f6c}button:focus-visible,input:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.error{color:#a4000f;font-weight:600}.hint,.note{color:#4a4a4a;font-size:.9rem}dt{font-weight:600}dd{margin:0 0 .5rem}`;

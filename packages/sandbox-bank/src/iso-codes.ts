/**
 * The code tables of SPEC 2.2, copied row for row (grouped by first letter, " / " between the
 * letters of a shared row). They are the SPEC's lists, not the current ISO lists: BYR, MRO, VEF and
 * the like are in, newer codes are not, so that the sandbox accepts exactly what the SPEC allows.
 */

/** Allowed currency codes (ISO 4217), SPEC 2.2. */
export const CURRENCY_CODE_TABLE: readonly (readonly [letters: string, codes: string])[] = [
  ["A", "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN"],
  ["B", "BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYR BZD"],
  ["C", "CAD CDF CHF CLP CNY COP CRC CUC CUP CVE CZK"],
  ["D", "DJF DKK DOP DZD"],
  ["E", "EGP ERN ETB EUR"],
  ["F", "FJD FKP"],
  ["G", "GBP GEL GGP GHS GIP GMD GNF GTQ GYD"],
  ["H", "HKD HNL HRK HTG HUF"],
  ["I", "IDR ILS IMP INR IQD IRR ISK"],
  ["J", "JEP JMD JOD JPY"],
  ["K", "KES KGS KHR KMF KPW KRW KWD KYD KZT"],
  ["L", "LAK LBP LKR LRD LSL LYD"],
  ["M", "MAD MDL MGA MKD MMK MNT MOP MRO MUR MVR MWK MXN MYR MZN"],
  ["N", "NAD NGN NIO NOK NPR NZD"],
  ["O, Q, W, Y", "OMR / QAR / WST / YER"],
  ["P", "PAB PEN PGK PHP PKR PLN PYG"],
  ["R", "RON RSD RUB RWF"],
  ["S", "SAR SBD SCR SDG SEK SGD SHP SLL SOS SPL SRD STD SVC SYP SZL"],
  ["T", "THB TJS TMT TND TOP TRY TTD TVD TWD TZS"],
  ["U", "UAH UGX USD UYU UZS"],
  ["V", "VEF VND VUV"],
  ["X", "XAF XCD XDR XOF XPF"],
  ["Z", "ZAR ZMW ZWD"],
];

/** Allowed country codes (ISO 3166-1 alpha-2), SPEC 2.2. */
export const COUNTRY_CODE_TABLE: readonly (readonly [letters: string, codes: string])[] = [
  ["A", "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ"],
  ["B", "BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ"],
  ["C", "CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ"],
  ["D", "DE DJ DK DM DO DZ"],
  ["E", "EC EE EG EH ER ES ET"],
  ["F", "FI FJ FK FM FO FR"],
  ["G", "GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY"],
  ["H", "HK HM HN HR HT HU"],
  ["I", "ID IE IL IM IN IO IQ IR IS IT"],
  ["J", "JE JM JO JP"],
  ["K", "KE KG KH KI KM KN KP KR KW KY KZ"],
  ["L", "LA LB LC LI LK LR LS LT LU LV LY"],
  ["M", "MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ"],
  ["N", "NA NC NE NF NG NI NL NO NP NR NU NZ"],
  ["O, Q, W, Y", "OM / QA / WF WS / YE YT"],
  ["P", "PA PE PF PG PH PK PL PM PN PR PS PT PW PY"],
  ["R", "RE RO RS RU RW"],
  ["S", "SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ"],
  ["T", "TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ"],
  ["U", "UA UG UM US UY UZ"],
  ["V", "VA VC VE VG VI VN VU"],
  ["Z", "ZA ZM ZW"],
];

function codesOf(table: readonly (readonly [string, string])[]): ReadonlySet<string> {
  return new Set(table.flatMap(([, codes]) => codes.split(/[\s/]+/).filter((code) => code.length > 0)));
}

export const CURRENCY_CODES = codesOf(CURRENCY_CODE_TABLE);
export const COUNTRY_CODES = codesOf(COUNTRY_CODE_TABLE);

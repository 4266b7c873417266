/** Attribute type names and OIDs for distinguished names, as OpenSSL names them in RFC 2253 output. */

/** OID → the name OpenSSL prints with `-nameopt RFC2253`. */
export const OID_TO_NAME: Readonly<Record<string, string>> = {
  "2.5.4.3": "CN",
  "2.5.4.4": "SN",
  "2.5.4.5": "serialNumber",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.9": "street",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.12": "title",
  "2.5.4.15": "businessCategory",
  "2.5.4.17": "postalCode",
  "2.5.4.42": "GN",
  "2.5.4.43": "initials",
  "2.5.4.46": "dnQualifier",
  "2.5.4.65": "pseudonym",
  "2.5.4.97": "organizationIdentifier",
  "0.9.2342.19200300.100.1.1": "UID",
  "0.9.2342.19200300.100.1.25": "DC",
  "1.2.840.113549.1.9.1": "emailAddress",
  "1.3.6.1.4.1.311.60.2.1.1": "jurisdictionL",
  "1.3.6.1.4.1.311.60.2.1.2": "jurisdictionST",
  "1.3.6.1.4.1.311.60.2.1.3": "jurisdictionC",
};

/**
 * Upper-cased name → OID, for reading DN strings. Covers OpenSSL's short and long names and the
 * aliases Java, .NET and LDAP tools write (S, E, STREET, SERIALNUMBER, OID.x.y.z is handled apart).
 */
export const NAME_TO_OID: Readonly<Record<string, string>> = (() => {
  const table: Record<string, string> = {};
  for (const [oid, name] of Object.entries(OID_TO_NAME)) table[name.toUpperCase()] = oid;
  const aliases: Record<string, string> = {
    COMMONNAME: "2.5.4.3",
    SURNAME: "2.5.4.4",
    COUNTRYNAME: "2.5.4.6",
    LOCALITYNAME: "2.5.4.7",
    S: "2.5.4.8",
    STATEORPROVINCENAME: "2.5.4.8",
    STREETADDRESS: "2.5.4.9",
    ORGANIZATIONNAME: "2.5.4.10",
    ORGANIZATIONALUNITNAME: "2.5.4.11",
    T: "2.5.4.12",
    GIVENNAME: "2.5.4.42",
    E: "1.2.840.113549.1.9.1",
    EMAIL: "1.2.840.113549.1.9.1",
    USERID: "0.9.2342.19200300.100.1.1",
    DOMAINCOMPONENT: "0.9.2342.19200300.100.1.25",
    ORGID: "2.5.4.97",
  };
  return { ...table, ...aliases };
})();

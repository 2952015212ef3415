/* fuzz_keys.h - a throwaway PKCS7 key pair for the eyaml harnesses (made with `hiera eyaml
 * createkeys`; tests/fuzz/keys holds the same files, to encrypt seeds with). */
#ifndef HIERA_FUZZ_KEYS_H
#define HIERA_FUZZ_KEYS_H

static const char PRIVATE_KEY[] =
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAtSIQVPhkSq9D5WKIbRfhNnh74nvdrAa4YlvCf/PJqD2BlHY/\n"
    "O/YT4lUpYHtTSojLqCzsRhMj3p6dOMoFBOSYxavttvCzXsguLKkrJHkNeov8YxiG\n"
    "KsntUeo2pNI0FxXwwYrjjH/oUK29nRbVUcoTWw/odsQfUVc3OvG0eirWPunF7QgW\n"
    "/tAO0ogZACECIrkQOu21jw7oKCAL5hLGLP5SDVzkrHzb0Wa8CFDsG3yKzE+cyxkH\n"
    "t8Mp4GgEeKD0PYTgreavb32gpA8GPdXYc+nLArEevDNSbwIVfge3OUxvMpISaYKF\n"
    "SrgyR0e0S1BvR4XtlZkpmdsspw0EtsNWsHw66wIDAQABAoIBAAN02YzvJH+ZJcy8\n"
    "LmnhuV/gH4HfgG5mizqaEUJLaHJRoiX8HHhl2Yev8L2Xlniz1ypBZgAJIERNdvPJ\n"
    "3xvY/nu4xfnmUMK8dsa0mU8oqpot26x+Bk/NhKRtUyRrPA7VhPLPvK6srixqWrwj\n"
    "RTTUJb4CHE4cr5OBlfTSmFgQdmaPtSMTxIiB61MWqa36Ks1YAreIr9o+yvFgFCxb\n"
    "dlKqxQBdktjZwqFK1Qik3ZAfNeXAR/QQMSHNN3hn3VheVoF/VzpJay2Q2K1TKpSL\n"
    "gao71YtwI9b5ly09s+CfJfCXOPhBE8+lyEZxoAuvzygi3gkCncYBSI73MZWxi5Td\n"
    "qT0gcakCgYEA+/WEghMvRoIAjcuD5yygIZy3pJ46Mil39LPZre+i2r65oyYxJkHG\n"
    "XVhC2Jro3IA8wl4W1uWZDk75cKCDAVHmaTAav9HWd3+T/GnBF6KChZ2aGtQcC0Mt\n"
    "KXo9JDqhv93lQxc9A0YAxrp76nfqt0v4VaOAhAmiK1YuXM7JJB3RNEcCgYEAuAnA\n"
    "f7KrVqmeRa485lSLTpfyUAsv7a4fXEFSoAMpgTpgmjzD7zw33UJ6caBvE4JyYvko\n"
    "l/3wsdCIyhVYw9Tts6CLpXndubVxBwWPaJAVUBtB0qw63XTvWFvEUXY4YzT6QW/+\n"
    "3FPVaTwCb1FdqMcjj7ZaSBYl+mEONpS8pI2oCj0CgYA1LnBmqDf9UOlfBIr125R9\n"
    "I8Abbg5okhowu1mB/ifItiMmzaPoKE//WebaI3BtQmAQwp1dhJ7Wx1KdNDQSrj/N\n"
    "CgtLW7ZCCNqql4PbQkD8hPSHHyhANFCvBY8sO3fysJp4m8oUC82UJL6NEfyn7dAf\n"
    "+1/f/syNCybEDh2kkuqadwKBgQCfVEIFzAcuNhbCOMCcoCEi38V2qtjJqu+XjS4d\n"
    "Pd+W85Visqzm13l94uniqYTAnTSunwsX20+ggeuLGMQKdrN7ychccI8XEhBShevM\n"
    "GMF64r4vx9AGnhAArSHfbLwQl3L5aB57XVDrlHp/KTAuyIjvCG5M7m/evlvxwP84\n"
    "bzNF+QKBgE7Ex5AmOGxYqR1byq05ab9BKaCa2stFEahN2TNs/bqco8IwkwRM6fIP\n"
    "9+VU7IJ+VXsiGeo+27gKGmqMaLxZLLGYTXh0KHUhhiBZjbJmfF8j6PGek8856MDJ\n"
    "a3RW/bQ0619FH3cAu0ff3NjwhHGGJ+GsPZuZDcN+2+13I6VrMz1k\n"
    "-----END RSA PRIVATE KEY-----\n";
static const char PUBLIC_KEY[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIC2TCCAcGgAwIBAgIBATANBgkqhkiG9w0BAQsFADAAMCAXDTI2MTEyMjE3NTAz\n"
    "OFoYDzIwNzYxMTA5MTc1MDM4WjAAMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIB\n"
    "CgKCAQEAtSIQVPhkSq9D5WKIbRfhNnh74nvdrAa4YlvCf/PJqD2BlHY/O/YT4lUp\n"
    "YHtTSojLqCzsRhMj3p6dOMoFBOSYxavttvCzXsguLKkrJHkNeov8YxiGKsntUeo2\n"
    "pNI0FxXwwYrjjH/oUK29nRbVUcoTWw/odsQfUVc3OvG0eirWPunF7QgW/tAO0ogZ\n"
    "ACECIrkQOu21jw7oKCAL5hLGLP5SDVzkrHzb0Wa8CFDsG3yKzE+cyxkHt8Mp4GgE\n"
    "eKD0PYTgreavb32gpA8GPdXYc+nLArEevDNSbwIVfge3OUxvMpISaYKFSrgyR0e0\n"
    "S1BvR4XtlZkpmdsspw0EtsNWsHw66wIDAQABo1wwWjAPBgNVHRMBAf8EBTADAQH/\n"
    "MB0GA1UdDgQWBBQyV+Ckvzb+aOe5S9slPQealmVF8TAoBgNVHSMEITAfgBQyV+Ck\n"
    "vzb+aOe5S9slPQealmVF8aEEpAIwAIIBATANBgkqhkiG9w0BAQsFAAOCAQEAIvZ7\n"
    "W0lGsQIGYNSZ9DNE1D0sS1AcN2TqeLE2DV9VPLG/YhFtVv7GcrfiImIPtzVtDvpK\n"
    "WM1SFODkQMfNMdGwv9ukhO72dkZQfqUx4Cx+ANSwr1q9vcT5EAeO+Myz1sWqBCVo\n"
    "YntX/9iRxGOYdGQEVqyudwOkXGNB6KEBGaOsAYgyVTFRInhh1t1JvHyU5UfSbR5c\n"
    "lsD0NPGsaMgJ7x730D0+X1DmGO8r9OTsYUTI0/CNrzWJKaw/+42am+aRScgnVTKP\n"
    "gZiCQc0qiVGqKl9b0iYmgh5yff8V5zOlLvy+UhBFYMWqAj8TJzKsAsOnIMAiqoQJ\n"
    "ZxjyejK2g2g2c2PzcA==\n"
    "-----END CERTIFICATE-----\n";

#endif

"""The lab's terms: what a row's status can be (status), the thresholds every finding and sentence depends on (rules),
and the translator that says them in English and 中文 from core/locales (i18n).
"""

// @ts-check
// Reader order: start (the demo and the owner's path), put it on a site, what readers get, run it, refresh it from CI, the other
// readers (agents), what owners learn, the API, quality and speed, working on Bookwise, reference.
/** @type {import('@docusaurus/plugin-content-docs').SidebarsConfig} */
const sidebars = {
  manual: [
    'index',
    'getting-started',
    {type: 'category', label: 'Adding Bookwise to a site', items: ['ingest', 'widget']},
    {type: 'category', label: 'Deploying', items: ['container', 'operations', 'security']},
    'ci',
    'agents',
    'insights',
    'api',
    {type: 'category', label: 'Evaluation and benchmarks', items: ['evaluation', 'benchmarks']},
    'development',
    {type: 'category', label: 'Reference', items: ['settings', 'errors', 'cli', 'http-api']},
  ],
};

module.exports = sidebars;
